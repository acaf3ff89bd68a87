# A Go duration (time.ParseDuration's syntax, unsigned) in seconds; the
# checks include it (jq -L deploy/checks).
def seconds:
  if . == "0" then 0
  elif test("^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$") then
    [ scan("([0-9]+(?:\\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
      | (.[0] | tonumber) * ({"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[.[1]]) ]
    | add
  else error("not a Go duration: \(tojson)") end;
