//! Host vectors for large results. A fresh output of hundreds of megabytes costs its first
//! writes one page fault per 4 KiB page, more than the work that fills it on a few cores (2^26
//! f32: 60 ms of faults against 5 ms of writing, two threads). Large outputs ask the kernel for
//! transparent huge pages (2 MiB, one fault each), as numpy does for its arrays; where the
//! kernel says no, nothing changes.

/// Outputs from this many bytes on are advised to use huge pages (numpy's bound too).
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// An empty vector with room for `capacity` items, its memory advised to use huge pages where
/// it is large.
pub fn output_vec<T>(capacity: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.spare_capacity_mut());
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(spare: &mut [std::mem::MaybeUninit<T>]) {
    let bytes = std::mem::size_of_val(spare);
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    const PAGE: usize = 4096;
    let start = spare.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    if end > first {
        // SAFETY: [first, end) lies within this vector's allocation, which the vector owns; the
        // advice changes how the kernel backs those pages, not their contents or who may use
        // them. A refusal (no transparent huge pages) is harmless and ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_: &mut [std::mem::MaybeUninit<T>]) {}
