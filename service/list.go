package service

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/runner"
)

// ListJobs' page sizes.
const (
	// DefaultListPage is a page's size when the request gives none.
	DefaultListPage = 1000
	// MaxListPage is the largest page; a larger request gets this many.
	MaxListPage = 10000
)

// ListJobs implements ProvingEngineHandler: the store's jobs, oldest first
// (by creation, then id), without partitions, in the states asked for, a
// page at a time. A page token names the last job of its page, so that a
// job forgotten or submitted between pages moves no other job across a
// page's edge.
func (s *Server) ListJobs(ctx context.Context, req *connect.Request[cuzkv1.ListJobsRequest]) (*connect.Response[cuzkv1.ListJobsResponse], error) {
	m := req.Msg
	want := map[cuzkv1.JobState]bool{}
	for _, st := range m.States {
		if _, ok := cuzkv1.JobState_name[int32(st)]; !ok || st == cuzkv1.JobState_JOB_STATE_UNSPECIFIED {
			return nil, invalid("states: %v is not a job's state", st)
		}
		want[st] = true
	}
	size := int(m.PageSize)
	if size == 0 {
		size = DefaultListPage
	}
	size = min(size, MaxListPage)
	var after *pageMark
	if m.PageToken != "" {
		pm, err := parsePageToken(m.PageToken)
		if err != nil {
			return nil, invalid("page_token: %v", err)
		}
		after = &pm
	}
	jobs, err := s.svc.Jobs()
	if err != nil {
		return nil, toConnect(err)
	}
	// Jobs come in the store's creation index order: by creation (to the
	// nanosecond the record keeps), then id, which is pageMark's order.
	out := &cuzkv1.ListJobsResponse{}
	var last runner.JobStatus
	for _, js := range jobs {
		if after != nil && !after.before(markOf(js)) {
			continue
		}
		pj := jobStatus(js, false)
		if len(want) > 0 && !want[pj.State] {
			continue
		}
		if len(out.Jobs) == size {
			out.NextPageToken = markOf(last).token()
			break
		}
		out.Jobs = append(out.Jobs, pj)
		last = js
	}
	return connect.NewResponse(out), nil
}

// pageMark is where a page of ListJobs ends: a job's creation and id.
type pageMark struct {
	created int64 // Unix nanoseconds
	id      string
}

func markOf(js runner.JobStatus) pageMark {
	return pageMark{created: js.Created.UnixNano(), id: js.ID}
}

func (a pageMark) before(b pageMark) bool {
	return a.created < b.created || a.created == b.created && a.id < b.id
}

func (a pageMark) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(a.created, 10) + "/" + a.id))
}

func parsePageToken(t string) (pageMark, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return pageMark{}, fmt.Errorf("not a token this daemon gave")
	}
	ns, id, ok := strings.Cut(string(b), "/")
	created, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return pageMark{}, fmt.Errorf("not a token this daemon gave")
	}
	return pageMark{created: created, id: id}, nil
}
