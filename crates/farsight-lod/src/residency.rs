//! The resident fallback (docs/design/entity-lod.md#resident-fallback): always draw something that is in memory.

/// The level to draw and whether it differs from the desired one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// `None` only when nothing is resident and nothing was drawn before.
    pub level: Option<usize>,
    /// True when `level` is not the desired level (it was not resident).
    pub using_fallback: bool,
}

/// If `desired` is resident, draw it. Otherwise try coarser levels first (nearest
/// coarser first), then finer ones (nearest finer first), else stay on `current`.
#[inline]
pub fn resolve_resident(
    desired: usize,
    count: usize,
    current: Option<usize>,
    is_resident: impl Fn(usize) -> bool,
) -> Resolved {
    if is_resident(desired) {
        return Resolved {
            level: Some(desired),
            using_fallback: false,
        };
    }
    let fallback = (desired + 1..count)
        .chain((0..desired).rev())
        .find(|&i| is_resident(i));
    match fallback {
        Some(level) => Resolved {
            level: Some(level),
            using_fallback: true,
        },
        None => Resolved {
            level: current,
            using_fallback: current.is_some(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(desired: usize, current: Option<usize>, resident: &[bool]) -> Resolved {
        resolve_resident(desired, resident.len(), current, |i| resident[i])
    }

    #[test]
    fn fallback_order_coarser_then_finer_then_current() {
        let all = [true, true, true, true];
        assert_eq!(
            res(1, None, &all),
            Resolved {
                level: Some(1),
                using_fallback: false
            }
        );
        // LOD0 wanted, not resident: LOD1 (coarser) before anything else.
        let r = res(0, Some(3), &[false, true, true, true]);
        assert_eq!(
            r,
            Resolved {
                level: Some(1),
                using_fallback: true
            }
        );
        // LOD1 wanted, LOD2 missing too: LOD3 (coarser) beats LOD0 (finer).
        assert_eq!(res(1, None, &[true, false, false, true]).level, Some(3));
        // No coarser resident: nearest finer.
        assert_eq!(res(2, None, &[true, true, false, false]).level, Some(1));
        // Nothing resident: stay on the current level.
        let none = [false; 4];
        assert_eq!(
            res(2, Some(0), &none),
            Resolved {
                level: Some(0),
                using_fallback: true
            }
        );
        assert_eq!(
            res(2, None, &none),
            Resolved {
                level: None,
                using_fallback: false
            }
        );
    }
}
