//! Kernel parameters: one `#[repr(C)]` struct per kernel, passed by value, whose size and field
//! offsets are checked against the C++ declaration at compile time. `kernel_params!` declares
//! the Rust side and records its layout; the registry appends `static_assert`s built from that
//! layout to the kernel source, so a struct that drifts from its C++ twin fails to compile
//! (under NVRTC, and in CI's compile check of every variant) instead of reading garbage.

/// The layout of a parameter struct as Rust lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    /// The C++ struct's name (a template-id such as `LabSharedParams<float>` is allowed).
    pub cpp_name: &'static str,
    /// `sizeof` the struct.
    pub size: usize,
    /// Each field's name and byte offset.
    pub fields: Vec<(&'static str, usize)>,
}

impl ParamLayout {
    /// C++ `static_assert`s that hold exactly when the C++ struct has this layout. NVRTC has
    /// no `offsetof`; its front end's `__INTADDR__` folds the classic null-pointer form.
    pub fn static_asserts(&self) -> String {
        let name = self.cpp_name;
        let mut s = format!(
            "static_assert(sizeof({name}) == {size}, \"{name}: size differs from the Rust side ({size} bytes)\");\n",
            size = self.size
        );
        for (field, offset) in &self.fields {
            s.push_str(&format!(
                "static_assert(__INTADDR__(&(({name}*)0)->{field}) == {offset}, \"{name}::{field}: offset differs from the Rust side ({offset})\");\n"
            ));
        }
        s
    }
}

/// A struct a kernel takes by value as its one parameter.
///
/// # Safety
/// The type must be `#[repr(C)]` plain data whose every field is valid on the device (numbers,
/// arrays of them, [`crate::device::DevPtr`]s and other `KernelParams`). Implement it with
/// `kernel_params!`, which also derives the layout that the C++ side is checked against.
pub unsafe trait KernelParams: cudarc::driver::DeviceRepr + Copy {
    /// The layout the C++ declaration must have.
    fn layout() -> ParamLayout;
}

/// Declares a kernel parameter struct: `#[repr(C)]`, `Clone + Copy + Debug + Default`, and
/// [`KernelParams`] with the layout recorded for the C++ side's `static_assert`s.
///
/// ```ignore
/// kernel_params! {
///     /// What the reduction kernel reads.
///     pub(crate) struct ReduceParams as "ReduceParams" {
///         input: DevPtr<f32>,
///         n: u64,
///     }
/// }
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! kernel_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident as $cpp:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default)]
        $vis struct $name {
            $( $(#[$fmeta])* pub(crate) $field: $ty, )*
        }
        // SAFETY: #[repr(C)] plain data (the macro's contract); its layout is checked against
        // the C++ declaration by the static_asserts built from `layout`.
        unsafe impl cudarc::driver::DeviceRepr for $name {}
        // SAFETY: as above.
        unsafe impl $crate::device::params::KernelParams for $name {
            fn layout() -> $crate::device::params::ParamLayout {
                $crate::device::params::ParamLayout {
                    cpp_name: $cpp,
                    size: ::std::mem::size_of::<$name>(),
                    fields: vec![$( (stringify!($field), ::std::mem::offset_of!($name, $field)) ),*],
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::device::DevPtr;

    crate::kernel_params! {
        /// A struct with padding, to check the offsets the macro records.
        struct Example as "Example" {
            a: u32,
            b: u64,
            p: DevPtr<f32>,
            c: [i32; 3],
        }
    }

    #[test]
    fn layout_is_what_rust_lays_out() {
        use super::KernelParams;
        let l = Example::layout();
        assert_eq!(l.size, 40);
        assert_eq!(l.fields, vec![("a", 0), ("b", 8), ("p", 16), ("c", 24)]);
        let asserts = l.static_asserts();
        assert!(asserts.contains("sizeof(Example) == 40"));
        assert!(asserts.contains("__INTADDR__(&((Example*)0)->c) == 24"));
        let _ = Example::default();
    }
}
