//! Windowed running max/min filter, as Linux's `lib/win_minmax.c` (Kathleen
//! Nichols' algorithm): three samples per window give the best, second-best and
//! third-best values of the last `win` time units. BBR keeps its max-bandwidth
//! filter (window in round trips) and, in v1, its min-RTT one this way.
//!
//! Times and values are `u32` and compared with wrapping subtraction, as the kernel does.

/// One `(time, value)` sample (`struct minmax_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinmaxSample {
    pub t: u32,
    pub v: u32,
}

/// `struct minmax`: the three best samples of the window, best first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minmax {
    pub s: [MinmaxSample; 3],
}

impl Minmax {
    /// `minmax_get`: the best value in the window.
    #[inline]
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// `minmax_reset`: forget everything, start from `(t, meas)`.
    #[inline]
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };
        self.s = [val; 3];
        meas
    }

    /// `minmax_subwin_update`: age the samples out of the window and keep the
    /// second and third choices spread over its quarters and halves.
    fn subwin_update(&mut self, win: u32, val: MinmaxSample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The best passed the window's end: promote the others, take the new one
            // as third; repeat once if the second was also stale.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window without a second choice: take one.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window without a third choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max`: the max of the last `win` time units after `meas` at `t`.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min`: the min of the last `win` time units after `meas` at `t`.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_max_keeps_the_window_best_and_expires_it() {
        let mut m = Minmax::default();
        // Rounds 0..10 with a peak of 100 at round 2, then lower values.
        assert_eq!(m.running_max(10, 0, 50), 50);
        assert_eq!(m.running_max(10, 1, 60), 60);
        assert_eq!(m.running_max(10, 2, 100), 100);
        for t in 3..=12 {
            assert_eq!(m.running_max(10, t, 70), 100, "round {t}: the peak is still in the window");
        }
        // Round 13: the peak (round 2) is 11 rounds old; the best of the rest is 70.
        assert_eq!(m.running_max(10, 13, 70), 70);
    }

    #[test]
    fn running_min_tracks_a_rising_floor_after_the_window() {
        let mut m = Minmax::default();
        m.reset(0, 10);
        for t in 1..=10 {
            assert_eq!(m.running_min(10, t, 20 + t), 10);
        }
        // The minimum of round 0 leaves the window; the filter's next choice is a later sample
        // and never below the true minimum of the window.
        let v = m.running_min(10, 11, 40);
        assert!(v > 10 && v <= 40, "{v}");
    }

    #[test]
    fn wrapping_time_is_handled() {
        let mut m = Minmax::default();
        m.reset(u32::MAX - 1, 5);
        assert_eq!(m.running_max(10, 3, 4), 5, "5 time units later across the wrap, still in the window");
        assert_eq!(m.running_max(10, 20, 4), 4);
    }
}
