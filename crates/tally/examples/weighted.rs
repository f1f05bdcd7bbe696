//! Weighted and 2-D histograms on whatever this machine has (the CPU where there is no GPU):
//! per-bin sums of weights in deterministic fixed point with their error bound, then a 2-D
//! histogram of (x, y) pairs, counted and weighted.
//!
//! `cargo run --release --example weighted -p tally [n]`

use tally::data::{gaussian_pairs, samples, unit_weights, Distribution};
use tally::{Backend, Histogram2dSpec, HistogramSpec, Pairs, Strategy, WeightedOptions};

fn main() -> tally::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
    let detected = Backend::detect();
    println!("{detected}");
    let backend = detected.backend;

    // 1-D, weighted: f32 samples in 100 bins over [0, 100), a weight in [0, 1) each.
    let xs: Vec<f32> = samples(Distribution::Uniform, 100, n, 1);
    let ws = unit_weights(n, 2);
    let spec = HistogramSpec::even(100, 0.0, 100.0);
    let h = backend.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default())?;
    let w = &h.weighting;
    println!(
        "weighted: {n} samples, strategy {}, deterministic {}, error bound {:.3e} per bin",
        h.strategy,
        w.deterministic,
        w.error_bound.unwrap_or(f64::NAN)
    );
    for (bin, sum) in h.sums[0].iter().enumerate().take(3) {
        println!("  bin {bin}: {sum:.6}");
    }
    // The same input gives the same bits on every run (and strategy, and backend).
    let again = backend.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default())?;
    assert!(h.same_bits(&again));
    // Float atomics, to compare: not deterministic on a GPU.
    let f = backend.histogram_weighted(&xs, &ws, &spec, WeightedOptions::float_atomics())?;
    println!("  bin 0 with float atomics: {:.6}", f.sums[0][0]);

    // 2-D: a Gaussian blob of interleaved (x, y) pairs in a 64 x 64 grid over [0, 1)^2.
    let pairs = gaussian_pairs(n, 0.5, 0.15, 3);
    let spec2 = Histogram2dSpec::even(64, (0.0, 1.0), 64, (0.0, 1.0));
    let m = backend.histogram_2d(Pairs::Interleaved(&pairs), &spec2, Strategy::Auto)?;
    let o = &m.outliers;
    println!(
        "2-D: {} x {} bins, centre bin (32, 32) {}, corner (0, 0) {}; outside: x {} + {}, y {} + {}, nan {}",
        m.bins_x,
        m.bins_y,
        m.count(32, 32),
        m.count(0, 0),
        o.x_below,
        o.x_above,
        o.y_below,
        o.y_above,
        o.nan
    );
    // Weighted 2-D: the pairs' weights summed per cell.
    let pw = unit_weights(n, 4);
    let mw = backend.histogram_2d_weighted(Pairs::Interleaved(&pairs), &pw, &spec2, WeightedOptions::default())?;
    println!("2-D weighted: centre bin (32, 32) sums to {:.6}", mw.sums[32 * mw.bins_y + 32]);
    Ok(())
}
