#!/usr/bin/env bash
# Makes the two Secrets the kustomize base's NATS cluster and crewd read
# (the chart makes its own): crewd-nats-tls, a CA and the servers'
# certificate it signs (ca.crt, tls.crt, tls.key: TLS on client and route
# connections, routes checked both ways), and crewd-nats-auth, crewd's NATS
# password (crewd-password). The CA's key is not kept: nothing more is
# signed. Needs openssl and kubectl; refuses to replace Secrets that exist.
# Usage: deploy/kustomize/nats-secrets.sh NAMESPACE
set -euo pipefail
ns="${1:?usage: $0 NAMESPACE}"
for s in crewd-nats-tls crewd-nats-auth; do
  if kubectl -n "$ns" get secret "$s" >/dev/null 2>&1; then
    echo "nats-secrets: secret $s exists in $ns: delete it first to make a new one" >&2
    exit 1
  fi
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=crewd-nats-ca" \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=crewd-nats" -keyout tls.key -out tls.csr 2>/dev/null
san="DNS:crewd-nats,DNS:crewd-nats.$ns,DNS:crewd-nats.$ns.svc,DNS:crewd-nats.$ns.svc.cluster.local"
san="$san,DNS:*.crewd-nats-headless,DNS:*.crewd-nats-headless.$ns,DNS:*.crewd-nats-headless.$ns.svc"
san="$san,DNS:*.crewd-nats-headless.$ns.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile ext.cnf -out tls.crt 2>/dev/null
openssl rand -hex 24 | tr -d '\n' >crewd-password
kubectl -n "$ns" create secret generic crewd-nats-tls --from-file=ca.crt --from-file=tls.crt --from-file=tls.key >/dev/null
kubectl -n "$ns" create secret generic crewd-nats-auth --from-file=crewd-password >/dev/null
echo "nats-secrets: crewd-nats-tls and crewd-nats-auth made in $ns"
