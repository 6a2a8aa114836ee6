//! `--threads N`: the rayon pool and candle's matrix kernels (which read `RAYON_NUM_THREADS`).

pub fn set_threads(threads: Option<usize>) {
    if let Some(n) = threads.filter(|&n| n > 0) {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        // The global pool may already exist (in tests); the variable still governs candle.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
}
