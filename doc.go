// Package crew runs a service's tasks on a bounded, reusable set of
// goroutines.
//
// A [Pool] has an upper bound of workers (by default runtime.GOMAXPROCS(0),
// which follows the container's CPU quota rounded up, at least 2; [CPUBound]
// is the quota rounded down, for CPU-bound tasks) and a bounded queue in
// front of them. Workers start lazily, when a task finds none free, and exit after an
// idle timeout: a pool that has nothing to do holds no goroutine, and New
// starts none.
//
// Two kinds of task:
//
//   - Short tasks, [Pool.Go] and [Pool.TryGo]: a func() run inline by a
//     worker. No timeout, no handle, no allocation; the cheapest path.
//   - Long tasks, [Pool.Submit] and [Pool.TrySubmit]: a
//     func(context.Context) error with an optional timeout, returning a
//     [*Task] to wait on. One allocation, which is both the handle and the
//     task's context.
//
// A panic in a task becomes a [*PanicError] carrying the value and the
// stack; the worker lives on. A task that times out releases its waiters at
// the deadline with [ErrTimeout], and its worker stays taken until the
// function really returns, so the bound always holds.
//
// [Pool.Pause], [Pool.Resume] and [Pool.Resize] change a running pool;
// [Pool.Stats] is a snapshot cheap enough for every Prometheus scrape, and
// [WithObserver] sees every task's name, queue wait, run time and outcome.
//
// [Pool.Shutdown] stops a pool in one of five modes ([DrainThenHard], the
// default, [Drain], [Soft], [SoftThenHard], [Hard]) with its deadline taken
// from a context, and returns by that deadline; [Pool.Close] stops it hard
// at once. Whatever the mode, every accepted
// task reaches exactly one terminal [State] and everyone waiting on it is
// released; once Shutdown returns nil, no goroutine of the pool is left.
//
// # Invariants
//
// What the pool promises, each checked by its tests under -race (the
// README's Proof section names them):
//
//  1. Every accepted task reaches exactly one terminal [State], and everyone
//     waiting on it (its [*Task], its [Group]) is released: in every
//     shutdown mode, on context cancellation, panic, timeout, resize and
//     pause.
//  2. No more task functions run at once than the bound, counting a timed-out
//     task that ignores its context until it really returns.
//  3. When Shutdown or Close returns nil, no goroutine of the pool is left;
//     functions that ignore cancellation under a hard stop are reported
//     ([ErrStuck]), not hidden.
//  4. A panicking task never crashes the process or lowers capacity.
//  5. Any call after shutdown returns a documented error at once
//     ([ErrClosed]): never a panic, never a hang.
//  6. Counters agree with what happened: submitted = succeeded + failed +
//     panicked + timed out + canceled + dropped + in flight; refusals at
//     submission are counted apart ([Stats]).
//  7. Work conservation: while the pool is open and not paused, a queued task
//     is taken as soon as fewer functions run than the bound, without
//     waiting for another task to end; tasks that wait for each other at the
//     bound all run. The rules that keep it are written at the top of
//     workers.go.
//  8. Shutdown and Close return by their context's deadline.
package crew
