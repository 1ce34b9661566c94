package notify

import (
	"errors"
	"testing"
)

func TestAllowList(t *testing.T) {
	l, err := ParseAllowList("127.0.0.1:*, hooks.example.com,*.svc.example:8443,[::1]:9000")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"http://127.0.0.1:8080/hook",
		"https://127.0.0.1/x",
		"https://hooks.example.com/a?b=c",
		"http://HOOKS.example.com:81/",
		"https://a.svc.example:8443/",
		"http://[::1]:9000/",
	} {
		if err := l.Check(u); err != nil {
			t.Errorf("Check(%q) = %v; want allowed", u, err)
		}
	}
	for _, u := range []string{
		"ftp://127.0.0.1/x",
		"http:///nohost",
		"/relative",
		"127.0.0.1:80",
		"http://127.0.0.2:80/",
		"http://evil.com/127.0.0.1",
		"http://hooks.example.com.evil.com/",
		"http://u:p@127.0.0.1/",
		"https://a.svc.example:8444/",
		"https://svc.example:8443/",
		"http://[::1]:9001/",
		"http://%zz/",
	} {
		if err := l.Check(u); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Check(%q) = %v; want ErrNotAllowed", u, err)
		}
	}
	var none *AllowList
	if err := none.Check("http://127.0.0.1/"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("nil list: Check = %v; want ErrNotAllowed", err)
	}
	empty, err := ParseAllowList("")
	if err != nil || !empty.Empty() {
		t.Fatalf("ParseAllowList(\"\") = %v, %v; want an empty list", empty, err)
	}
}

func TestParseAllowListBad(t *testing.T) {
	for _, s := range []string{"a:b:c:", "host:", "a/b", "a?b", "[x", "u@h", "h[1]", ":80"} {
		if _, err := ParseAllowList(s); err == nil {
			t.Errorf("ParseAllowList(%q) = nil error; want one", s)
		}
	}
}

func TestSignature(t *testing.T) {
	body := []byte(`{"txid":"x","status":"committed"}`)
	sig := Sign([]byte("s3cret"), body)
	if !Verify([]byte("s3cret"), body, sig) {
		t.Fatalf("Verify with the right secret failed for %s", sig)
	}
	if Verify([]byte("wrong"), body, sig) {
		t.Fatal("Verify with a wrong secret passed")
	}
	if Verify([]byte("s3cret"), append(body, ' '), sig) {
		t.Fatal("Verify of a changed body passed")
	}
	// A known vector: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
	want := "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	if got := Sign([]byte("key"), []byte("The quick brown fox jumps over the lazy dog")); got != want {
		t.Fatalf("Sign = %s; want %s", got, want)
	}
}
