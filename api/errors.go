package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/txlog/txlog/api/wire"
)

// named returns err, or when it says that something is not found, the error
// of wording m (wire's messages table) with id: a 404 names the kind and the
// id that is missing, whatever the backend said.
func named(err error, m wire.Msg, id any) error {
	if err != nil && errors.Is(err, wire.ErrNotFound) {
		return wire.New(m, id)
	}
	return err
}

// probeMethods are the methods a 405's Allow header may list: every method a
// route of the router takes.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}

// allowed returns the methods of probeMethods that a route of router takes on
// the path of r, found by matching the path with each method.
func allowed(router *mux.Router, r *http.Request) []string {
	var out []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			out = append(out, m)
		}
	}
	return out
}

func (a *answers) handleNotFound(w http.ResponseWriter, r *http.Request) {
	a.writeError(w, wire.New(wire.MsgNoRoute, r.Method, r.URL.EscapedPath()))
}

// pageFiles returns d, answering the JSON 404 of the wording table for a
// path under /ui/ that names none of the page's files (when d tells them
// apart: ui.Handler does), instead of net/http's plain-text one.
func (s *Server) pageFiles(d http.Handler) http.Handler {
	files, ok := d.(interface{ Serves(path string) bool })
	if !ok {
		return d
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !files.Serves(r.URL.Path) {
			s.handleNotFound(w, r)
			return
		}
		d.ServeHTTP(w, r)
	})
}

// methodNotAllowed returns the handler of a request whose path a route of
// router serves with other methods: 405, with those methods in Allow. HEAD
// and OPTIONS are not served by any route, so they get the same answer.
func (s *Server) methodNotAllowed(router *mux.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		methods := allowed(router, r)
		w.Header().Set("Allow", strings.Join(methods, ", "))
		s.writeError(w, wire.New(wire.MsgMethodNotAllowed, r.Method, r.URL.EscapedPath(), strings.Join(methods, ", ")))
	}
}
