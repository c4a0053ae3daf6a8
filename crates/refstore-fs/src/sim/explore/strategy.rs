//! How the controller chooses whose turn is next.
//!
//! - [`Bounded`]: every schedule with at most a given number of
//!   preemptions, depth first (CHESS's preemption bounding). A preemption is
//!   taking the turn from an actor that could go on; taking it from an
//!   actor that waits to retry, or has finished, is free. Most concurrency
//!   bugs need one or two preemptions, and the schedules with that few are
//!   far fewer than all of them.
//! - [`Pct`]: random schedules with a probabilistic guarantee (PCT, Burckhardt
//!   et al. 2010): actors get random priorities, the highest-priority actor
//!   runs, and at `depth - 1` random turns the running actor drops to the
//!   lowest priority. A bug that needs `depth` ordering constraints is found
//!   by one schedule with probability at least `1 / (n * k^(depth-1))`.
//!
//! Both are deterministic: a schedule is a list of actor numbers, and the
//! same list replays the same run.

use super::scheduler::Point;

/// Chooses the next actor among those waiting for a turn.
pub(crate) trait Chooser {
    /// `waiting`: the actors waiting and where (in actor order); `last`:
    /// the actor that had the previous turn.
    fn choose(&mut self, waiting: &[(usize, Point)], last: Option<usize>) -> usize;
}

/// Whether giving the turn to `next` preempts `last`.
fn preempts(waiting: &[(usize, Point)], last: Option<usize>, next: usize) -> bool {
    match last {
        Some(last) if last != next => waiting.contains(&(last, Point::Op)),
        _ => false,
    }
}

/// The choice that preempts no one: the last actor if it can go on, else
/// the next waiting actor after it (round robin).
fn without_preemption(waiting: &[(usize, Point)], last: Option<usize>) -> usize {
    if let Some(last) = last {
        if waiting.contains(&(last, Point::Op)) {
            return last;
        }
        if let Some(&(next, _)) = waiting.iter().find(|(a, _)| *a > last) {
            return next;
        }
    }
    waiting[0].0
}

/// One turn of a depth-first exploration.
#[derive(Debug)]
struct Decision {
    waiting: Vec<(usize, Point)>,
    last: Option<usize>,
    chosen: usize,
    tried: Vec<usize>,
    /// Preemptions on the way to this turn.
    preemptions: u32,
}

impl Decision {
    fn preemptions_after(&self) -> u32 {
        self.preemptions + u32::from(preempts(&self.waiting, self.last, self.chosen))
    }
}

/// Every schedule with at most `bound` preemptions, depth first.
#[derive(Debug)]
pub(crate) struct Bounded {
    bound: u32,
    trail: Vec<Decision>,
    /// Turns of the current run so far.
    depth: usize,
    /// Turns replayed from the previous run before choosing anew.
    replay: usize,
}

impl Bounded {
    pub(crate) fn new(bound: u32) -> Self {
        Bounded {
            bound,
            trail: Vec::new(),
            depth: 0,
            replay: 0,
        }
    }

    /// Prepares the next schedule; false once every schedule within the
    /// bound was run.
    pub(crate) fn advance(&mut self) -> bool {
        while let Some(d) = self.trail.last_mut() {
            let alternative = d.waiting.iter().map(|&(a, _)| a).find(|&a| {
                !d.tried.contains(&a)
                    && d.preemptions + u32::from(preempts(&d.waiting, d.last, a)) <= self.bound
            });
            if let Some(a) = alternative {
                d.tried.push(a);
                d.chosen = a;
                self.replay = self.trail.len();
                self.depth = 0;
                return true;
            }
            self.trail.pop();
        }
        false
    }
}

impl Chooser for Bounded {
    fn choose(&mut self, waiting: &[(usize, Point)], last: Option<usize>) -> usize {
        let depth = self.depth;
        self.depth += 1;
        if depth < self.replay {
            let d = &self.trail[depth];
            assert_eq!(
                d.waiting, waiting,
                "the run differs from the one it replays at turn {depth}: \
                 the actors are not deterministic"
            );
            return d.chosen;
        }
        let preemptions = self.trail.last().map_or(0, Decision::preemptions_after);
        let chosen = without_preemption(waiting, last);
        self.trail.truncate(depth);
        self.trail.push(Decision {
            waiting: waiting.to_vec(),
            last,
            chosen,
            tried: vec![chosen],
            preemptions,
        });
        chosen
    }
}

/// A small deterministic random number generator (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// PCT: random priorities with `depth - 1` priority change points.
#[derive(Debug)]
pub(crate) struct Pct {
    priorities: Vec<i64>,
    change_points: Vec<u64>,
    turn: u64,
    lowest: i64,
}

impl Pct {
    /// A schedule for `actors` actors of about `turns` turns.
    pub(crate) fn new(seed: u64, actors: usize, turns: u64, depth: usize) -> Self {
        let mut rng = Rng::new(seed);
        let mut priorities: Vec<i64> = (0..actors as i64).map(|p| p + depth as i64).collect();
        for i in (1..priorities.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            priorities.swap(i, j);
        }
        let change_points = (1..depth).map(|_| 1 + rng.below(turns.max(1))).collect();
        Pct {
            priorities,
            change_points,
            turn: 0,
            lowest: 0,
        }
    }

    fn demote(&mut self, actor: usize) {
        self.lowest -= 1;
        self.priorities[actor] = self.lowest;
    }
}

impl Chooser for Pct {
    fn choose(&mut self, waiting: &[(usize, Point)], last: Option<usize>) -> usize {
        self.turn += 1;
        if let Some(last) = last {
            if self.change_points.contains(&self.turn) {
                self.demote(last);
            }
        }
        loop {
            let &(best, point) = waiting
                .iter()
                .max_by_key(|(a, _)| self.priorities[*a])
                .expect("someone waits");
            // An actor that waits to retry yields to the others: it would
            // only spin until they let go of what it waits for.
            if point == Point::Pause
                && waiting.len() > 1
                && !waiting.iter().all(|(_, p)| *p == Point::Pause)
            {
                self.demote(best);
                continue;
            }
            return best;
        }
    }
}

/// Replays a recorded schedule.
#[derive(Debug)]
pub(crate) struct Replay {
    pub(crate) schedule: Vec<usize>,
    pub(crate) turn: usize,
}

impl Chooser for Replay {
    fn choose(&mut self, waiting: &[(usize, Point)], last: Option<usize>) -> usize {
        let turn = self.turn;
        self.turn += 1;
        match self.schedule.get(turn) {
            Some(&a) if waiting.iter().any(|(w, _)| *w == a) => a,
            Some(&a) => panic!("the schedule gives turn {turn} to actor {a}, which does not wait"),
            None => without_preemption(waiting, last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_exploration_counts_the_schedules_of_two_actors() {
        // Two actors of three turns each (their start, then two
        // operations): without preemptions one runs entirely before the
        // other (two schedules); unbounded, every interleaving: C(6, 3).
        let mut counts = Vec::new();
        for bound in [0, 1, 10] {
            let mut dfs = Bounded::new(bound);
            let mut runs = 0;
            loop {
                let mut left = [3usize, 3];
                let mut last = None;
                loop {
                    let waiting: Vec<(usize, Point)> = (0..2)
                        .filter(|&a| left[a] > 0)
                        .map(|a| {
                            (
                                a,
                                if left[a] == 3 {
                                    Point::Start
                                } else {
                                    Point::Op
                                },
                            )
                        })
                        .collect();
                    if waiting.is_empty() {
                        break;
                    }
                    let a = dfs.choose(&waiting, last);
                    left[a] -= 1;
                    last = Some(a);
                }
                runs += 1;
                if !dfs.advance() {
                    break;
                }
            }
            counts.push(runs);
        }
        assert_eq!(counts[0], 2);
        assert_eq!(counts[2], 20);
        assert!(counts[0] < counts[1] && counts[1] < counts[2], "{counts:?}");
    }

    #[test]
    fn pct_is_deterministic_per_seed() {
        let waiting = [(0, Point::Op), (1, Point::Op), (2, Point::Op)];
        let run = |seed| {
            let mut pct = Pct::new(seed, 3, 20, 3);
            (0..20)
                .map(|_| pct.choose(&waiting, Some(0)))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert!((0..20).any(|s| run(s) != run(7)));
    }
}
