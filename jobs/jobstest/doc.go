// Package jobstest is the behaviour every jobs store keeps, for a store's
// tests: the kinds the tests submit (sleep, factorial and flaky, from
// Kinds) and the specs that make them (Sleep, Factorial, Flaky, Attempts,
// Timed), and the checks a store's runners must pass (CheckKeyed: the
// idempotency-key contract of jobs.KeyedRunner).
//
// memjobs and jsjobs run it in their tests; a store of one's own can too.
// It needs nothing beyond package jobs and the standard library (its
// checks take a *testing.T), so that a store's tests bring in no
// dependency of another store's.
package jobstest
