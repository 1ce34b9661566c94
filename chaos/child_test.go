package chaos

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJSONLines: what jsonLines writes reads back, and a torn last line (a
// child killed mid-write) is left out.
func TestJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	j, err := openJSONLines(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []ConsumerBatchOp{{Consumer: "k1", Token: 7, First: 3, Last: 5, Projected: []uint64{3, 5}, At: 1}, {Consumer: "k1", Token: 7, Late: true, Answer: "rejected", At: 2}}
	for _, op := range want {
		if err := j.write(op); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"consumer":"k1","tok`)
	f.Close()
	got, err := readJSONLines[ConsumerBatchOp](path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("readJSONLines = %+v, %v; want %+v", got, err, want)
	}
}

// TestChildMain: the flags, the list flag, and the required flags' error.
func TestChildMain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"all set", []string{"--targets=a, b", "--id=x"}, ""},
		{"no id", []string{"--targets=a"}, "t: --targets and --id are required"},
		{"empty list", []string{"--targets=,", "--id=x"}, "t: --targets and --id are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var targets []string
			ran := false
			var b strings.Builder
			err := childMain(t.Context(), tc.args, &b, "t", "role", []string{"targets", "id"},
				func(fs *flag.FlagSet) {
					fs.Var((*commaList)(&targets), "targets", "")
					fs.String("id", "", "")
				},
				func(_ context.Context, _ *slog.Logger) error { ran = true; return nil })
			switch {
			case tc.wantErr == "" && (err != nil || !ran || !reflect.DeepEqual(targets, []string{"a", "b"})):
				t.Fatalf("childMain = %v, ran %v, targets %q", err, ran, targets)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || ran):
				t.Fatalf("childMain = %v (ran %v), want %q", err, ran, tc.wantErr)
			}
		})
	}
}
