# One JetStream cluster of three nats-servers, the same file for each; the
# compose file gives each its name (--name nats1). Routes are by compose
# service name; a server skips the route to itself.
listen: 0.0.0.0:4222
# A client (crewd) that stops answering is dropped after about 2 s x 2;
# crewd pings the same way, so one attached to a server cut off the
# network moves to another within about 6 s.
ping_interval: "2s"
ping_max: 2
# Monitoring: /healthz, /varz, /jsz (the test reads stream and peer state here).
http: 0.0.0.0:8222

# TLS for clients and routes (the certificates in /etc/nats-tls), and one
# user, crewd, allowed only its stream's and bucket's subjects and the
# JetStream API calls on them (jsjobs.PermissionsFor("jobs", "jobs"); a
# test compares): no stream deleted, no other read. Its password is the
# environment's CREWD_NATS_PASSWORD. The system account has no user.
tls {
  cert_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/tls.crt
  key_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/tls.key
  ca_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/ca.crt
  timeout: 2
}
authorization {
  users: [
    {
      user: crewd
      password: $CREWD_NATS_PASSWORD
      permissions: {
        publish: [
          "jobs.>"
          "jobs-at.>"
          "jobs-cancel.>"
          "$KV.jobs.>"
          "$JS.API.INFO"
          "$JS.API.STREAM.INFO.jobs"
          "$JS.API.STREAM.CREATE.jobs"
          "$JS.API.STREAM.UPDATE.jobs"
          "$JS.API.STREAM.MSG.GET.jobs"
          "$JS.API.STREAM.MSG.DELETE.jobs"
          "$JS.API.STREAM.PURGE.jobs"
          "$JS.API.DIRECT.GET.jobs"
          "$JS.API.DIRECT.GET.jobs.>"
          "$JS.API.CONSUMER.*.jobs"
          "$JS.API.CONSUMER.*.jobs.>"
          "$JS.API.CONSUMER.*.*.jobs.>"
          "$JS.ACK.jobs.>"
          "$JS.FC.jobs.>"
          "$JS.API.STREAM.INFO.KV_jobs"
          "$JS.API.STREAM.CREATE.KV_jobs"
          "$JS.API.STREAM.UPDATE.KV_jobs"
          "$JS.API.STREAM.MSG.GET.KV_jobs"
          "$JS.API.STREAM.MSG.DELETE.KV_jobs"
          "$JS.API.STREAM.PURGE.KV_jobs"
          "$JS.API.DIRECT.GET.KV_jobs"
          "$JS.API.DIRECT.GET.KV_jobs.>"
          "$JS.API.CONSUMER.*.KV_jobs"
          "$JS.API.CONSUMER.*.KV_jobs.>"
          "$JS.API.CONSUMER.*.*.KV_jobs.>"
          "$JS.ACK.KV_jobs.>"
          "$JS.FC.KV_jobs.>"
        ]
        subscribe: [
          "_INBOX.>"
          "jobs-cancel.>"
        ]
      }
    }
  ]
}

jetstream {
  store_dir: /data
  max_memory_store: 64MB
  max_file_store: 1GB
}

cluster {
  name: crew
  listen: 0.0.0.0:6222
  # A route to a server cut off the network is dropped within about 3 s
  # (the default would take minutes), so requests stop going to it; the
  # streams' leaders are elected again by JetStream's own heartbeats.
  ping_interval: "1s"
  ping_max: 2
  routes: [
    nats-route://nats1:6222
    nats-route://nats2:6222
    nats-route://nats3:6222
  ]
  # Routes over TLS, each server's certificate checked both ways.
  tls {
    cert_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/tls.crt
    key_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/tls.key
    ca_file: /tmp/crew-deploy-check.Xtbt8v/nats-tls/ca.crt
    verify: true
    timeout: 2
  }
}
