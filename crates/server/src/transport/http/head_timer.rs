//! The timer hyper's HTTP/1.1 connection uses for its header read timeout,
//! one per connection.
//!
//! hyper asks its timer for a new sleep each time it starts reading a
//! request head and drops it once the head is read: with
//! `hyper_util::rt::TokioTimer` that is a Tokio timer put in the timer wheel
//! and taken out again for every request, which cost a few per cent of a
//! keep-alive connection's throughput (`bench/README.md`). Here every sleep a
//! connection asks for shares one Tokio timer, which stays in the wheel: a
//! sleep only records its deadline, and the shared timer is moved only when
//! it fires before that deadline (about once per timeout while requests keep
//! coming) or when a deadline is earlier than the one it is set for.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer};

/// A [`Timer`] for one connection: its sleeps share one Tokio timer.
#[derive(Clone, Default)]
pub(super) struct ConnectionTimer {
    shared: Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>,
}

impl Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(SharedSleep {
            shared: Arc::clone(&self.shared),
            deadline: deadline.into(),
        })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        if let Some(sleep) = sleep.as_mut().downcast_mut_pin::<SharedSleep>() {
            sleep.get_mut().deadline = new_deadline.into();
        }
    }

    /// Tokio's clock, so that tests with paused time control it.
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into()
    }
}

/// A deadline, awaited on its connection's shared timer.
struct SharedSleep {
    shared: Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>,
    deadline: tokio::time::Instant,
}

impl Future for SharedSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let timer = shared.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        loop {
            if timer.deadline() > deadline {
                timer.as_mut().reset(deadline);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // The shared timer was set for an earlier sleep's deadline.
            if tokio::time::Instant::now() >= deadline {
                return Poll::Ready(());
            }
            timer.as_mut().reset(deadline);
        }
    }
}

impl Sleep for SharedSleep {}

#[cfg(test)]
mod tests {
    use super::*;

    fn poll(sleep: &mut Pin<Box<dyn Sleep>>) -> Poll<()> {
        let waker = std::task::Waker::noop();
        sleep.as_mut().poll(&mut Context::from_waker(waker))
    }

    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
    }

    /// Asserts that `sleep` ends exactly `after` from now: still pending
    /// a millisecond before, ready then.
    async fn assert_ends_after(sleep: &mut Pin<Box<dyn Sleep>>, after: Duration) {
        let just_before = after - Duration::from_millis(1);
        advance(just_before).await;
        assert_eq!(poll(sleep), Poll::Pending, "ended before {after:?}");
        advance(Duration::from_millis(1)).await;
        assert_eq!(poll(sleep), Poll::Ready(()), "not ended at {after:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_ends_at_its_deadline() {
        let timer = ConnectionTimer::default();
        let mut sleep = timer.sleep(Duration::from_secs(10));
        assert_eq!(poll(&mut sleep), Poll::Pending);
        assert_ends_after(&mut sleep, Duration::from_secs(10)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_sleep_does_not_end_at_an_earlier_sleeps_deadline() {
        let timer = ConnectionTimer::default();
        let mut first = timer.sleep(Duration::from_secs(10));
        assert_eq!(poll(&mut first), Poll::Pending);
        drop(first);
        advance(Duration::from_secs(3)).await;
        let mut second = timer.sleep(Duration::from_secs(10));
        assert_eq!(poll(&mut second), Poll::Pending);
        advance(Duration::from_secs(7)).await;
        assert_eq!(
            poll(&mut second),
            Poll::Pending,
            "ended at the first one's deadline"
        );
        assert_ends_after(&mut second, Duration::from_secs(3)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_moves_the_shared_timer_forward() {
        let timer = ConnectionTimer::default();
        let mut late = timer.sleep(Duration::from_secs(60));
        assert_eq!(poll(&mut late), Poll::Pending);
        let mut early = timer.sleep(Duration::from_secs(5));
        assert_eq!(poll(&mut early), Poll::Pending);
        advance(Duration::from_secs(5)).await;
        assert_eq!(poll(&mut early), Poll::Ready(()));
        assert_eq!(poll(&mut late), Poll::Pending);
    }

    #[tokio::test(start_paused = true)]
    async fn reset_moves_a_sleeps_deadline() {
        let timer = ConnectionTimer::default();
        let mut sleep = timer.sleep(Duration::from_secs(10));
        assert_eq!(poll(&mut sleep), Poll::Pending);
        timer.reset(&mut sleep, timer.now() + Duration::from_secs(20));
        assert_ends_after(&mut sleep, Duration::from_secs(20)).await;
    }
}
