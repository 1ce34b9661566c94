package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/ui"
)

func TestFiring(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0).UTC() }
	ev := func(name, status string, s int, labels map[string]string) alert.Event {
		return alert.Event{Alert: name, Status: status, Severity: alert.Warning, Node: "n1", Since: at(s), Labels: labels}
	}
	m2 := map[string]string{"member": "n2"}
	m3 := map[string]string{"member": "n3"}
	tests := []struct {
		name string
		evs  []alert.Event
		want []string // alert,member of each firing alert, in order
	}{
		{name: "none", want: nil},
		{name: "one firing", evs: []alert.Event{ev(alert.ParkedBacklog, alert.Firing, 1, nil)}, want: []string{"TxlogParkedBacklog,"}},
		{name: "fired and resolved", evs: []alert.Event{ev(alert.ParkedBacklog, alert.Firing, 1, nil), ev(alert.ParkedBacklog, alert.Resolved, 2, nil)}},
		{
			name: "labels keep episodes apart",
			evs: []alert.Event{
				ev(alert.MemberUnreachable, alert.Firing, 1, m2),
				ev(alert.MemberUnreachable, alert.Firing, 2, m3),
				ev(alert.MemberUnreachable, alert.Resolved, 3, m2),
			},
			want: []string{"TxlogMemberUnreachable,n3"},
		},
		{
			name: "fired again after it resolved",
			evs: []alert.Event{
				ev(alert.BreakerOpen, alert.Firing, 1, nil),
				ev(alert.NoLeader, alert.Firing, 2, nil),
				ev(alert.BreakerOpen, alert.Resolved, 3, nil),
				ev(alert.BreakerOpen, alert.Firing, 4, nil),
			},
			want: []string{"TxlogNoLeader,", "TxlogRedisBreakerOpen,"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range firing(tt.evs) {
				got = append(got, a.Alert+","+a.Labels["member"])
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("firing() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestThresholds(t *testing.T) {
	got := thresholds(alert.Thresholds{ParkedMax: 7, ParkedAge: 90 * time.Second, UnreachableFor: 10 * time.Second, FsyncP99: 50 * time.Millisecond, DiskFreePercent: 12.5})
	if got.ParkedMax != 7 || got.ParkedAgeSeconds != 90 || got.UnreachableForSeconds != 10 || got.FsyncP99Ms != 50 || got.DiskFreePercent != 12.5 {
		t.Fatalf("thresholds() = %+v", got)
	}
}

// TestThresholdsDefaults: a zero Thresholds (a Config not made by
// ParseConfig) gets the rules' defaults, not zeros that colour nothing.
func TestThresholdsDefaults(t *testing.T) {
	got := thresholds(alert.Thresholds{})
	want := ui.Thresholds{ParkedMax: 1000, ParkedAgeSeconds: 60, UnreachableForSeconds: 10, FsyncP99Ms: 50, DiskFreePercent: 10}
	if got != want {
		t.Fatalf("thresholds(zero) = %+v, want %+v", got, want)
	}
}

func TestDashInfoRead(t *testing.T) {
	dir := t.TempDir()
	di := &dashInfo{version: buildVersion(), started: time.Now().Add(-time.Minute), dataDir: dir}
	di.keep(func(now time.Time) alert.Snapshot {
		return alert.Snapshot{Now: now, FsyncP99: 3 * time.Millisecond, Parked: 4, ParkedOldest: now.Add(-time.Hour)}
	})(time.Now())
	got := di.read()
	if got.Version == "" || got.UptimeSeconds < 60 || got.FsyncP99Ms != 3 || got.DiskFreeBytes == 0 || got.DiskUsedBytes == 0 {
		t.Fatalf("read() = %+v; want a version, uptime >= 60 s, fsync p99 3 ms and the disk's numbers", got)
	}
	if got.Parked != 4 || got.ParkedOldestSeconds < 3600 {
		t.Fatalf("read() = %+v; want the alert snapshot's 4 parked, the oldest an hour old", got)
	}
	if strings.TrimSpace(got.Version) != got.Version {
		t.Fatalf("version %q has spaces around it", got.Version)
	}
}

// TestDashInfoThresholds: the page's bounds are the --alert-* flags' values
// (their defaults included), not copies. --alert-disk-free-percent has no
// flag default: the page takes the rule's default (10%) from
// alert.Thresholds.WithDefaults, so the disk is coloured without the flag.
func TestDashInfoThresholds(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		want     int
		wantDisk float64
	}{
		{[]string{"--id", "n1"}, 1000, 10},
		{[]string{"--id", "n1", "--alert-parked-max", "7", "--alert-disk-free-percent", "12.5"}, 7, 12.5},
	} {
		cfg, err := ParseConfig(tt.args, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		th := newDashInfo(&Node{cfg: cfg}).thresholds
		if th.ParkedMax != tt.want || th.UnreachableForSeconds != 10 || th.FsyncP99Ms != 50 || th.ParkedAgeSeconds != 60 || th.DiskFreePercent != tt.wantDisk {
			t.Errorf("%q: thresholds %+v, want parked_max %d, disk %v%% and the flags' defaults", tt.args, th, tt.want, tt.wantDisk)
		}
	}
}
