//! Loops compiled for the vector instructions the CPU has: [`simd_dispatch!`] generates a
//! function that runs a body compiled for AVX-512 or AVX2 with FMA, picked at run time, and for
//! the build's baseline elsewhere. The memory-bound passes of batch norm and of the bias
//! gradient use it; Winograd's transforms pick their lane width themselves.

/// Generates `$name`, which runs `$body` compiled for AVX-512 or AVX2 with FMA where the CPU
/// has them (picked at run time) and for the build's baseline elsewhere.
macro_rules! simd_dispatch {
    ($(fn $name:ident / $body:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $name($($arg: $ty),*) {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f,avx2,fma")]
                    unsafe fn wide($($arg: $ty),*) {
                        $body($($arg),*)
                    }
                    #[target_feature(enable = "avx2,fma")]
                    unsafe fn narrow($($arg: $ty),*) {
                        $body($($arg),*)
                    }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: the CPU has the features `wide` is compiled for.
                        return unsafe { wide($($arg),*) };
                    }
                    if std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                    {
                        // SAFETY: the CPU has the features `narrow` is compiled for.
                        return unsafe { narrow($($arg),*) };
                    }
                }
                $body($($arg),*)
            }
        )*
    };
}
