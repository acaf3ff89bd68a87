package crew

import (
	"bufio"
	"bytes"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// CPUQuota reports the CPU limit of the cgroup this process runs in, in
// CPUs: 0.5 for a container limited to 500m, 1.5 for 1500m. ok is false
// when there is no limit, or no cgroup to read (not Linux, no /proc). It is
// read as the Go runtime reads it for GOMAXPROCS: the process's own cgroup
// (a parent's tighter limit is not seen), cgroup v1's cpu controller when
// the process has one, else cgroup v2; and read again on each call.
func CPUQuota() (cpus float64, ok bool) {
	return cpuQuota(os.DirFS("/"))
}

// CPUBound is a pool bound for CPU-bound tasks under the container's CPU
// quota: the quota rounded down, at least 1 and at most GOMAXPROCS, or
// GOMAXPROCS when there is no quota.
//
// GOMAXPROCS itself (crew's default bound) follows the quota since Go 1.25
// but rounds it up and never goes below 2: in a pod limited to 500m or
// 1 CPU it is 2. Below 1 CPU, two CPU-bound workers are throttled and
// CPUBound's 1 runs them with less tail latency; at a quota of 1 or more,
// two workers may still do better (bench/README, quotapool: measure). It
// bounds the pool only: work outside the pool's tasks (decoding requests,
// say) still runs GOMAXPROCS wide. For tasks that wait (I/O, a database),
// keep the default or a larger bound: the quota does not limit waiting.
func CPUBound() int {
	procs := runtime.GOMAXPROCS(0)
	cpus, ok := CPUQuota()
	if !ok {
		return procs
	}
	return boundFor(cpus, procs)
}

func boundFor(cpus float64, procs int) int {
	return max(1, min(procs, int(math.Floor(cpus))))
}

// cpuQuota is CPUQuota over a file system rooted at "/".
func cpuQuota(fsys fs.FS) (float64, bool) {
	group, v1, ok := cpuCgroup(fsys)
	if !ok {
		return 0, false
	}
	dir, ok := cgroupDir(fsys, group, v1)
	if !ok {
		return 0, false
	}
	if v1 {
		quota, err1 := readNumber(fsys, path.Join(dir, "cpu.cfs_quota_us"))
		period, err2 := readNumber(fsys, path.Join(dir, "cpu.cfs_period_us"))
		if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
			return 0, false // -1: no limit
		}
		return float64(quota) / float64(period), true
	}
	b, err := fs.ReadFile(fsys, path.Join(dir, "cpu.max"))
	if err != nil {
		return 0, false
	}
	q, p, found := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !found || q == "max" {
		return 0, false
	}
	quota, err1 := strconv.ParseInt(q, 10, 64)
	period, err2 := strconv.ParseInt(p, 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0, false
	}
	return float64(quota) / float64(period), true
}

// cpuCgroup reads the process's CPU cgroup from /proc/self/cgroup: the
// line of the v1 hierarchy with the cpu controller, else v2's "0::" line.
func cpuCgroup(fsys fs.FS) (group string, v1, ok bool) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return "", false, false
	}
	var v2 string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, ok1 := strings.Cut(sc.Text(), ":")
		controllers, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			continue
		}
		if id == "0" && controllers == "" {
			v2 = p
			continue
		}
		for _, c := range strings.Split(controllers, ",") {
			if c == "cpu" {
				return p, true, true
			}
		}
	}
	return v2, false, v2 != ""
}

// cgroupDir finds the directory of group from /proc/self/mountinfo: the
// mount of the matching cgroup file system (cgroup with the cpu option for
// v1, cgroup2 for v2) whose root contains group, joined with group's path
// below that root. The path has no leading slash, as fs.FS wants.
func cgroupDir(fsys fs.FS, group string, v1 bool) (string, bool) {
	b, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, found := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !found || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		root, mount := unescape(fields[3]), unescape(fields[4])
		switch {
		case v1 && tail[0] == "cgroup":
			if len(tail) < 3 || !hasOption(tail[2], "cpu") {
				continue
			}
		case !v1 && tail[0] == "cgroup2":
		default:
			continue
		}
		rel, ok := below(group, root)
		if !ok {
			continue
		}
		return strings.TrimPrefix(path.Join(mount, rel), "/"), true
	}
	return "", false
}

// below is p's path below root, when root contains p.
func below(p, root string) (string, bool) {
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

func hasOption(options, want string) bool {
	for _, o := range strings.Split(options, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func readNumber(fsys fs.FS, name string) (int64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
