package chaos

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

func TestParseAcks(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // FormatAcks of the result
		err      string
	}{
		{"default", DefaultAcks, "quorum*55,all*15,accepted*30", ""},
		{"plain list", "quorum, all", "quorum*1,all*1", ""},
		{"weights", "quorum*3,all", "quorum*3,all*1", ""},
		{"unknown", "quorum,majority", "", `unknown ack "majority" (known: all, accepted, quorum)`},
		{"zero weight", "quorum*0", "", `ack "quorum*0": weight "0", want 1..1000`},
		{"bad weight", "all*x", "", `ack "all*x": weight "x", want 1..1000`},
		{"twice", "all,quorum,all*2", "", `ack "all" given twice`},
		{"empty", " , ", "", "no ack levels given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAcks(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseAcks(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || FormatAcks(got) != tt.want {
				t.Fatalf("ParseAcks(%q) = %s, %v; want %s", tt.in, FormatAcks(got), err, tt.want)
			}
		})
	}
}

func TestWorkloadConfigAcks(t *testing.T) {
	bad := WorkloadConfig{Acks: []AckWeight{{"majority", 1}, {wire.AckAll, 0}, {wire.AckQuorum, 1}, {wire.AckQuorum, 2}}}
	err := bad.withDefaults().Validate()
	for _, want := range []string{`unknown ack "majority"`, `ack "all" weight 0, want 1..1000`, `ack "quorum" given twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %q", err, want)
		}
	}
	if err := (WorkloadConfig{}).withDefaults().Validate(); err != nil {
		t.Errorf("Validate() of the defaults = %v", err)
	}
}

// drawAcks draws n ack levels under cfg and counts them.
func drawAcks(cfg WorkloadConfig, n int) map[string]int {
	w := &workload{cfg: cfg.withDefaults()}
	rng := rand.New(rand.NewPCG(7, 1))
	got := map[string]int{}
	for range n {
		got[w.ackLevel(rng)]++
	}
	return got
}

func TestAckLevel(t *testing.T) {
	t.Run("quorum and all only", func(t *testing.T) {
		acks, _ := ParseAcks("quorum*3,all")
		got := drawAcks(WorkloadConfig{Acks: acks}, 4000)
		if got[wire.AckAccepted] != 0 || got[wire.AckQuorum] < 2800 || got[wire.AckQuorum] > 3200 || got[wire.AckAll] < 800 {
			t.Fatalf("drew %v, want about 3000 quorum, 1000 all, no accepted", got)
		}
	})
	t.Run("default", func(t *testing.T) {
		got := drawAcks(WorkloadConfig{}, 10000)
		for ack, want := range map[string]int{wire.AckQuorum: 5500, wire.AckAll: 1500, wire.AckAccepted: 3000} {
			if got[ack] < want-300 || got[ack] > want+300 {
				t.Errorf("drew %d %s of 10000, want about %d", got[ack], ack, want)
			}
		}
	})
	t.Run("order of the list does not matter", func(t *testing.T) {
		a, _ := ParseAcks("quorum*2,accepted,all*3")
		b, _ := ParseAcks("all*3,quorum*2,accepted")
		wa, wb := &workload{cfg: WorkloadConfig{Acks: a}.withDefaults()}, &workload{cfg: WorkloadConfig{Acks: b}.withDefaults()}
		ra, rb := rand.New(rand.NewPCG(3, 3)), rand.New(rand.NewPCG(3, 3))
		for i := range 200 {
			if x, y := wa.ackLevel(ra), wb.ackLevel(rb); x != y {
				t.Fatalf("draw %d: %s vs %s", i, x, y)
			}
		}
	})
}

func TestWorkloadConfigClient(t *testing.T) {
	if got := (WorkloadConfig{}).withDefaults().Client; got != ClientHTTP {
		t.Errorf("default Client = %q, want %q", got, ClientHTTP)
	}
	if err := (WorkloadConfig{Client: ClientStream}).withDefaults().Validate(); err != nil {
		t.Errorf("Validate() of Client stream = %v", err)
	}
	err := (WorkloadConfig{Client: "grpc"}).withDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), `Client "grpc"`) {
		t.Errorf("Validate() of Client grpc = %v, want it named", err)
	}
	w := newWorkload(WorkloadConfig{Client: ClientStream}.withDefaults(), []string{"http://127.0.0.1:1"}, 1, "r")
	if w.clientConfig(nil).HTTPWrites {
		t.Error("Client stream: HTTPWrites set, want writes over the stream")
	}
	w = newWorkload(WorkloadConfig{}.withDefaults(), []string{"http://127.0.0.1:1"}, 1, "r")
	if !w.clientConfig(nil).HTTPWrites {
		t.Error("Client http: HTTPWrites not set")
	}
}
