package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
)

// helperEnv names the case a re-run of this test binary plays as a program
// that calls Main.
const helperEnv = "COMMAND_TEST_CASE"

func TestMain(m *testing.M) {
	if c := os.Getenv(helperEnv); c != "" {
		Main("prog", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			switch c {
			case "ok":
				fmt.Fprintln(stdout, "args", args)
				return nil
			case "help":
				return fmt.Errorf("parse: %w", flag.ErrHelp)
			default:
				return errors.New("boom")
			}
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestMainExit(t *testing.T) {
	for _, tc := range []struct {
		name, stdout, stderr string
		code                 int
	}{
		{"ok", "args [a b]\n", "", 0},
		{"help", "", "", 0},
		{"fail", "", "prog: boom\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "a", "b")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.name)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
