// Package natsjs runs the messages of a NATS JetStream pull consumer as tasks
// on a crew pool, so that a pod killed with SIGKILL loses nothing: the work
// lives in the stream, a pod pulls only what its pool can start, and a
// message it did not finish comes back to another pod after AckWait.
//
// Delivery is at-least-once. A message is acked after its handler returns
// nil, so a crash, a lost lease or a lost ack runs it again, possibly on
// another pod, possibly while the first run is still going. Handlers must be
// idempotent: key the effect by Msg.StreamSeq (or an id in the payload) and
// make a second run a no-op.
//
// What a Source does with a message:
//
//   - Pulls it only when the pool has a free slot for it, plus a window
//     that adapts (it grows while the pool starves between pulls with a
//     backlog in the stream, shrinks while the pool is fed, and is bounded
//     by four times the pool's bound and a tenth of AckWait's worth of
//     starts) or is fixed with WithWindow, counting the pool's other work.
//   - Renews its lease (InProgress) while it waits or runs longer than a
//     fraction of AckWait (WithHeartbeat); cancels the handler's context
//     with ErrLeaseLost when the lease cannot be kept.
//   - Acks it when the handler returns nil (WithDoubleAck to wait for the
//     server's confirmation); naks it with exponential backoff and jitter,
//     by attempt, when the handler fails or panics (WithBackoff); on the
//     last attempt (the consumer's MaxDeliver, or WithMaxDeliver) publishes
//     it to a dead-letter subject (WithDeadLetter) and terms it.
//   - Runs it again with the same delivery, no attempt spent, when its
//     handler reports an outage of what it needs (Unavailable).
//   - Hands it back (nak without delay) when a stop finds it not started, or
//     when the pool's hard stop cancelled it.
//
// Shutdown stops pulling and lets the pulls in flight run out, hands back
// every message not yet started, then waits for the running handlers, which
// finish, are cancelled or are handed back as the pool's own shutdown mode
// decides.
//
// Package natsprom exports a Source's Stats and Lag to Prometheus.
package natsjs
