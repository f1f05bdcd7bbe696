//! Run-time compilation: a thin checked wrapper over NVRTC that hands our own headers to the
//! compiler (NVRTC cannot read files) and returns CUBIN for the device's own architecture.

use crate::error::{Error, Result};
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};

/// Whether libnvrtc can be loaded. cudarc panics on first use when it cannot: ask first.
pub fn available() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

fn check(call: &str, r: sys::nvrtcResult) -> Result<()> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: NVRTC returns a static string for every result code.
    let msg = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) };
    Err(Error::Nvrtc { call: call.into(), message: msg.to_string_lossy().into_owned() })
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    check("nvrtcVersion", unsafe { sys::nvrtcVersion(&mut major, &mut minor) })?;
    Ok((major, minor))
}

/// The real architectures (e.g. 90 for sm_90) this NVRTC can emit CUBIN for.
pub fn supported_archs() -> Result<Vec<i32>> {
    let mut n = 0;
    check("nvrtcGetNumSupportedArchs", unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) })?;
    let mut archs = vec![0i32; n.max(0) as usize];
    check("nvrtcGetSupportedArchs", unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) })?;
    Ok(archs)
}

/// A compiled module image: CUBIN where NVRTC knows the device, PTX for the driver otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub cubin: bool,
}

/// The `-arch` option for a device of compute capability `cc`: `sm_XX` (CUBIN) when this NVRTC
/// supports it, else PTX for the newest virtual architecture it knows (the driver JITs it).
pub fn arch_option(cc: (i32, i32)) -> Result<(String, bool)> {
    let want = cc.0 * 10 + cc.1;
    let archs = supported_archs()?;
    if archs.contains(&want) {
        return Ok((format!("sm_{want}"), true));
    }
    let newest = archs.iter().copied().filter(|&a| a <= want).max();
    match newest {
        Some(a) => Ok((format!("compute_{a}"), false)),
        None => Err(Error::CudaUnavailable(format!(
            "NVRTC {:?} cannot target compute capability {}.{} (supports {archs:?})",
            version().unwrap_or((0, 0)),
            cc.0,
            cc.1
        ))),
    }
}

/// Compiles `source` (named `name` in messages) with `headers` as (include name, text) pairs.
pub fn compile<H: AsRef<str>>(
    name: &str,
    source: &str,
    headers: &[(&str, H)],
    arch: &str,
    options: &[String],
) -> Result<Image> {
    let cstr = |s: &str| CString::new(s).expect("kernel text has no NUL bytes");
    let src = cstr(source);
    let cname = cstr(name);
    let header_texts: Vec<CString> = headers.iter().map(|(_, t)| cstr(t.as_ref())).collect();
    let header_names: Vec<CString> = headers.iter().map(|(n, _)| cstr(n)).collect();
    let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|c| c.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();

    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            cname.as_ptr(),
            headers.len() as i32,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    })?;
    struct Guard(sys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
        }
    }
    let guard = Guard(prog);

    let mut all: Vec<String> = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    all.extend(options.iter().cloned());
    let opts: Vec<CString> = all.iter().map(|o| cstr(o)).collect();
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    let r = unsafe { sys::nvrtcCompileProgram(guard.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        let mut size = 0usize;
        unsafe { sys::nvrtcGetProgramLogSize(guard.0, &mut size) };
        let mut log = vec![0u8; size.max(1)];
        unsafe { sys::nvrtcGetProgramLog(guard.0, log.as_mut_ptr() as *mut c_char) };
        let log = String::from_utf8_lossy(&log).trim_end_matches('\0').to_string();
        return Err(Error::Compile { kernel: name.into(), options: all.join(" "), log });
    }

    let cubin = arch.starts_with("sm_");
    let mut size = 0usize;
    let bytes = if cubin {
        check("nvrtcGetCUBINSize", unsafe { sys::nvrtcGetCUBINSize(guard.0, &mut size) })?;
        let mut b = vec![0u8; size];
        check("nvrtcGetCUBIN", unsafe { sys::nvrtcGetCUBIN(guard.0, b.as_mut_ptr() as *mut c_char) })?;
        b
    } else {
        check("nvrtcGetPTXSize", unsafe { sys::nvrtcGetPTXSize(guard.0, &mut size) })?;
        let mut b = vec![0u8; size];
        check("nvrtcGetPTX", unsafe { sys::nvrtcGetPTX(guard.0, b.as_mut_ptr() as *mut c_char) })?;
        b // NUL-terminated, as cuModuleLoadData wants for PTX
    };
    Ok(Image { bytes, cubin })
}
