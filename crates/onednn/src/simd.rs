//! Loops compiled for the vector instructions the CPU has: [`simd_dispatch!`] generates
//! functions (or methods) that run a body compiled for AVX-512 or AVX2 with FMA, picked at run
//! time, and for the build's baseline elsewhere. Batch norm's passes, the bias gradient's sums
//! and Winograd's transforms use it.

/// Generates `$name`, which runs `$body` compiled for AVX-512 or AVX2 with FMA where the CPU
/// has them (picked at run time) and for the build's baseline elsewhere. The bodies are free
/// functions, or with `self: Type;` first, methods of `Type` (the generated ones too).
macro_rules! simd_dispatch {
    ($(fn $name:ident / $body:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $name($($arg: $ty),*) {
                simd_dispatch!(@pick ($($arg: $ty),*) => $body($($arg),*))
            }
        )*
    };
    (self: $t:ty; $(fn $name:ident / $body:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $name(&self, $($arg: $ty),*) {
                let this = self;
                simd_dispatch!(@pick (this: &$t, $($arg: $ty),*) => this.$body($($arg),*))
            }
        )*
    };
    (@pick ($($arg:ident : $ty:ty),*) => $call:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx2,fma")]
            unsafe fn wide($($arg: $ty),*) {
                $call
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn narrow($($arg: $ty),*) {
                $call
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
        $call
    }};
}
