use super::*;

/// Every specialisation a plan can ask for is in GeneralVariant::all, which CI compiles.
#[test]
fn plans_only_ask_for_listed_variants() {
    let all = GeneralVariant::all();
    for strategy in GENERAL_STRATEGIES {
        for accum in [Accum::Fixed(SharedAtomics::Halves), Accum::Fixed(SharedAtomics::Native64), Accum::Float] {
            for weight in [DType::F32, DType::F64] {
                for dtype in DType::ALL {
                    for bins in
                        [Bins::even(256, 0.0, 256.0), Bins::even(10, 0.5, 7.25), Bins::Edges(vec![0.0, 1.0, 3.0])]
                    {
                        let v = GeneralVariant {
                            dtype,
                            binning: binning_for(dtype, &bins),
                            binning_y: None,
                            channels: 4,
                            weight: Some(weight),
                            accum,
                            strategy,
                        }
                        .normalised();
                        assert!(all.contains(&v), "{v:?}");
                    }
                }
                for dtype in GENERAL_2D_DTYPES {
                    let v = GeneralVariant {
                        dtype,
                        binning: Binning::Float,
                        binning_y: Some(Binning::Edges),
                        channels: 1,
                        weight: Some(weight),
                        accum,
                        strategy,
                    }
                    .normalised();
                    assert!(all.contains(&v), "{v:?}");
                }
            }
        }
        let v = GeneralVariant {
            dtype: DType::F32,
            binning: Binning::Edges,
            binning_y: Some(Binning::Float),
            channels: 1,
            weight: None,
            accum: Accum::Count,
            strategy,
        };
        assert!(all.contains(&v), "{v:?}");
    }
}

#[test]
fn shared_memory_of_a_block() {
    let v = GeneralVariant {
        dtype: DType::F32,
        binning: Binning::Float,
        binning_y: None,
        channels: 1,
        weight: Some(DType::F32),
        accum: Accum::Fixed(SharedAtomics::Halves),
        strategy: Strategy::BlockShared,
    };
    // 256 bins + 3 outliers + trash, 8 bytes each; 3 outlier counts padded to 16 bytes.
    assert_eq!(shared_bytes(&v, 256, 3), 16 + 260 * 8);
    let g = GeneralVariant { strategy: Strategy::GlobalL2, ..v };
    assert_eq!(shared_bytes(&g, 1 << 20, 3), 16 + 4 * 8);
    let f = GeneralVariant { accum: Accum::Float, ..v };
    assert_eq!(shared_bytes(&f, 256, 3), 16 + 260 * 4);
}
