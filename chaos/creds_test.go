package chaos

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestCredentialsArgsRoundTrip(t *testing.T) {
	in := Credentials{Token: "t0k", CAFile: "ca.crt", CertFile: "c.crt", KeyFile: "c.key"}
	args := in.args()
	if strings.Contains(strings.Join(args, " "), in.Token) {
		t.Fatalf("args() = %q: the token must not be on a command line", args)
	}
	if env := in.env(); !slices.Equal(env, []string{TokenEnv + "=t0k"}) {
		t.Fatalf("env() = %q, want the token in %s", env, TokenEnv)
	}
	var out Credentials
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	out.define(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	out.Token = in.Token
	if out != in {
		t.Fatalf("parsed %+v, want %+v", out, in)
	}
	if (Credentials{}).args() != nil || (Credentials{}).env() != nil {
		t.Fatal("zero Credentials: want no flags and no environment")
	}
}

func TestConfigTLSValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"tls needs a local cluster", Config{Targets: []string{"https://127.0.0.1:1"}, Dir: "d", TLS: true}, "TLS secures a local cluster"},
		{"tls and credentials", Config{Bin: "txlogd", Dir: "d", TLS: true, Credentials: Credentials{Token: "x"}}, "one or the other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if err := (Config{Bin: "txlogd", Dir: "d", TLS: true}).Validate(); err != nil {
		t.Fatalf("Validate(TLS, local) = %v, want nil", err)
	}
}
