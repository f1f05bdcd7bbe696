//! Run-time compilation: a thin checked wrapper over NVRTC that hands our own headers to the
//! compiler (NVRTC cannot read files) and returns CUBIN for the device's own architecture.

use crate::error::{Error, Result};
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};

/// Whether libnvrtc can be loaded. cudarc panics on first use when it cannot: ask first.
pub fn available() -> bool {
    // SAFETY: the probe only tries to dlopen each candidate library name and drops what it
    // opened; no NVRTC function is called.
    unsafe { sys::is_culib_present() }
}

fn check(call: &str, r: sys::nvrtcResult) -> Result<()> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: `nvrtcGetErrorString` takes any result code by value and returns a pointer to a
    // NUL-terminated string in NVRTC's static storage (a generic text for unknown codes), so
    // the pointer is valid for the `'static` borrow `CStr::from_ptr` makes; nothing frees it.
    let msg = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) };
    Err(Error::Nvrtc { call: call.into(), message: msg.to_string_lossy().into_owned() })
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers come from live, exclusive borrows of `c_int`s; NVRTC writes one
    // integer through each and keeps neither.
    let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    check("nvrtcVersion", r)?;
    Ok((major, minor))
}

/// The real architectures (e.g. 90 for sm_90) this NVRTC can emit CUBIN for.
pub fn supported_archs() -> Result<Vec<i32>> {
    let mut n = 0;
    // SAFETY: the pointer comes from a live, exclusive borrow of a `c_int`; NVRTC writes the
    // count through it and keeps nothing.
    let r = unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) };
    check("nvrtcGetNumSupportedArchs", r)?;
    let mut archs = vec![0i32; n.max(0) as usize];
    // SAFETY: NVRTC writes exactly as many integers as `nvrtcGetNumSupportedArchs` just
    // reported (the list is fixed for the library's lifetime), and `archs` holds that many.
    let r = unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    check("nvrtcGetSupportedArchs", r)?;
    Ok(archs)
}

/// A compiled module image: CUBIN where NVRTC knows the device, PTX for the driver otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The CUBIN, or the PTX text with its terminating NUL.
    pub bytes: Vec<u8>,
    /// Whether `bytes` is CUBIN (true) or PTX (false).
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

    let header_count = i32::try_from(headers.len()).expect("fewer than 2^31 headers");
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: `prog` is a live, exclusive out-pointer. `src` and `cname` are NUL-terminated
    // `CString`s, and `text_ptrs` and `name_ptrs` are arrays of exactly `header_count` pointers
    // to NUL-terminated `CString`s; all of them are locals declared before `guard`, so they
    // outlive the program (destroyed when `guard` drops), whatever NVRTC keeps of them.
    let r = unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            cname.as_ptr(),
            header_count,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    };
    check("nvrtcCreateProgram", r)?;
    /// Owns a program that `nvrtcCreateProgram` created, and destroys it once.
    struct Guard(sys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: the handle came from a successful `nvrtcCreateProgram` (the guard is made
            // only after that call is checked), is destroyed only here, and is not used after.
            unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
        }
    }
    let guard = Guard(prog);

    let mut all: Vec<String> = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    all.extend(options.iter().cloned());
    let opts: Vec<CString> = all.iter().map(|o| cstr(o)).collect();
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    let option_count = i32::try_from(opt_ptrs.len()).expect("fewer than 2^31 options");
    // SAFETY: `guard.0` is a live program; `opt_ptrs` is an array of exactly `option_count`
    // pointers to NUL-terminated `CString`s (`opts`), all alive for the call.
    let r = unsafe { sys::nvrtcCompileProgram(guard.0, option_count, opt_ptrs.as_ptr()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        let mut size = 0usize;
        // SAFETY: `guard.0` is a live program; `size` is a live, exclusive out-pointer.
        let r = unsafe { sys::nvrtcGetProgramLogSize(guard.0, &mut size) };
        let log = if r == sys::nvrtcResult::NVRTC_SUCCESS {
            let mut log = vec![0u8; size.max(1)];
            // SAFETY: `guard.0` is a live program whose log NVRTC just sized at `size` bytes
            // (its NUL included); `log` holds at least that many, so the copy stays in bounds.
            unsafe { sys::nvrtcGetProgramLog(guard.0, log.as_mut_ptr() as *mut c_char) };
            String::from_utf8_lossy(&log).trim_end_matches('\0').to_string()
        } else {
            "(no log: nvrtcGetProgramLogSize failed)".to_string()
        };
        return Err(Error::Compile { kernel: name.into(), options: all.join(" "), log });
    }

    let cubin = arch.starts_with("sm_");
    let mut size = 0usize;
    let bytes = if cubin {
        // SAFETY: `guard.0` is a live, compiled program; `size` is a live, exclusive out-pointer.
        let r = unsafe { sys::nvrtcGetCUBINSize(guard.0, &mut size) };
        check("nvrtcGetCUBINSize", r)?;
        let mut b = vec![0u8; size];
        // SAFETY: NVRTC copies exactly the `size` bytes it just reported into `b`, which holds
        // `size` bytes; the program is live.
        let r = unsafe { sys::nvrtcGetCUBIN(guard.0, b.as_mut_ptr() as *mut c_char) };
        check("nvrtcGetCUBIN", r)?;
        b
    } else {
        // SAFETY: `guard.0` is a live, compiled program; `size` is a live, exclusive out-pointer.
        let r = unsafe { sys::nvrtcGetPTXSize(guard.0, &mut size) };
        check("nvrtcGetPTXSize", r)?;
        let mut b = vec![0u8; size];
        // SAFETY: NVRTC copies exactly the `size` bytes it just reported (the NUL included)
        // into `b`, which holds `size` bytes; the program is live.
        let r = unsafe { sys::nvrtcGetPTX(guard.0, b.as_mut_ptr() as *mut c_char) };
        check("nvrtcGetPTX", r)?;
        b // NUL-terminated, as cuModuleLoadData wants for PTX
    };
    Ok(Image { bytes, cubin })
}
