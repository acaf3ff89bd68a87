package crew

import (
	"testing"
	"testing/fstest"
)

// The mountinfo lines of a container, as Docker and Kubernetes mount them.
const (
	mountV2     = "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	mountV2Root = "30 24 0:26 /kubepods/pod1 /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	mountV1     = "40 30 0:35 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n" +
		"41 30 0:36 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
	mountEscaped = "30 24 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n"
)

func TestCPUQuotaFromCgroups(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		cpus  float64
		ok    bool
	}{
		{"v2, 500m", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "50000 100000\n"}, 0.5, true},
		{"v2, 1500m", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "150000 100000\n"}, 1.5, true},
		{"v2, no limit", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "max 100000\n"}, 0, false},
		{"v2, nested, the mount's root a parent of the group", map[string]string{
			"proc/self/cgroup": "0::/kubepods/pod1/ctr\n", "proc/self/mountinfo": mountV2Root,
			"sys/fs/cgroup/ctr/cpu.max": "250000 100000\n"}, 2.5, true},
		{"v2, nested, the host's whole tree", map[string]string{
			"proc/self/cgroup": "0::/system.slice/crewd.service\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/system.slice/crewd.service/cpu.max": "100000 100000\n"}, 1, true},
		{"v2, a mount point with a space", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountEscaped,
			"sys/fs/my cgroup/cpu.max": "50000 100000\n"}, 0.5, true},
		{"v1, 500m", map[string]string{
			"proc/self/cgroup":    "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
			"proc/self/mountinfo": mountV1 + mountV2,
			"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us":  "50000\n",
			"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}, 0.5, true},
		{"v1, no limit", map[string]string{
			"proc/self/cgroup": "4:cpu,cpuacct:/\n", "proc/self/mountinfo": mountV1,
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0, false},
		{"no /proc (not Linux)", map[string]string{}, 0, false},
		{"no cpu.max file", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2}, 0, false},
		{"no cgroup mount", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"}, 0, false},
		{"garbage in cpu.max", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "lots\n"}, 0, false},
		{"garbage in /proc/self/cgroup", map[string]string{
			"proc/self/cgroup": "nonsense\n::\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "50000 100000\n"}, 0, false},
		{"a zero period", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": mountV2,
			"sys/fs/cgroup/cpu.max": "50000 0\n"}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range c.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			cpus, ok := cpuQuota(fsys)
			if cpus != c.cpus || ok != c.ok {
				t.Fatalf("cpuQuota = %v, %v; want %v, %v", cpus, ok, c.cpus, c.ok)
			}
		})
	}
}

func TestBoundForQuota(t *testing.T) {
	for _, c := range []struct {
		cpus  float64
		procs int
		want  int
	}{
		{0.5, 2, 1},  // Go's GOMAXPROCS is 2 here: twice the quota
		{1, 2, 1},    // and here
		{1.5, 2, 1},  // rounded down
		{2.5, 3, 2},  // idem
		{8, 4, 4},    // never above GOMAXPROCS
		{0.01, 2, 1}, // at least 1
	} {
		if got := boundFor(c.cpus, c.procs); got != c.want {
			t.Errorf("boundFor(%v, %d) = %d, want %d", c.cpus, c.procs, got, c.want)
		}
	}
}

// TestCPUBoundHere: on this machine the bound is between 1 and GOMAXPROCS,
// whatever its cgroups say.
func TestCPUBoundHere(t *testing.T) {
	cpus, ok := CPUQuota()
	t.Logf("CPUQuota() = %v, %v; CPUBound() = %d", cpus, ok, CPUBound())
	if b := CPUBound(); b < 1 || b > 64*1024 {
		t.Fatalf("CPUBound() = %d", b)
	}
}
