package ui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crew-go/crew/jobs"
)

// workflowPage is a workflow (jobs.SubmitWorkflow): its own job's state,
// its steps drawn as a graph, parents to the left, each with its state
// (up to maxDrawn steps), and listed.
func (u *UI) workflowPage(w http.ResponseWriter, r *http.Request, v view) {
	id := r.PathValue("id")
	if !jobs.ValidID(id) {
		u.message(w, r, http.StatusBadRequest, "That is no workflow id.")
		return
	}
	rec, err := u.Jobs.Get(r.Context(), id)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		u.message(w, r, http.StatusNotFound, fmt.Sprintf("No workflow %s (unknown, or its record was evicted).", id))
		return
	case err != nil:
		u.message(w, r, http.StatusServiceUnavailable, "The workflow cannot be read now: "+err.Error())
		return
	}
	steps, err := jobs.WorkflowOf(rec)
	if err != nil {
		u.message(w, r, http.StatusNotFound, fmt.Sprintf("Job %s is no workflow's.", id))
		return
	}
	recs, _ := jobs.GetAll(r.Context(), u.Jobs.Get, jobs.StepIDs(steps))
	states := make([]jobs.State, len(steps))
	for i, sr := range recs {
		states[i] = sr.State // "" for one not read
	}
	counts := jobs.Counts{}
	running := !rec.State.Terminal()
	for _, st := range states {
		counts[st]++
		running = running || st != "" && !st.Terminal()
	}
	v.Data = struct {
		Job     jobs.Record
		Counts  jobs.Counts
		Graph   graph
		Steps   []jobs.WorkflowStep
		States  []jobs.State
		Running bool // a step has not ended (since a retry, perhaps)
	}{rec, counts, layout(steps, states), steps, states, running}
	u.render(w, http.StatusOK, "workflow", v)
}

// maxDrawn is the most steps a workflow's page draws; the list shows all.
const maxDrawn = 200

// graph is a workflow drawn: its steps as boxes in columns by depth (a
// step one column right of its deepest parent), its edges as lines.
type graph struct {
	Width, Height int
	Nodes         []node
	Edges         []edge
	Drawn         bool // false: too many steps to draw
}

type node struct {
	Name, ID string
	State    jobs.State
	X, Y     int
}

// edge is a line from a parent's box to its child's, as an SVG path: a
// curve, bowed above the boxes between when it skips a column on one row.
type edge struct{ Path string }

func curve(x1, y1, x2, y2 int) edge {
	bow := 0
	if y1 == y2 && x2-x1 > colW {
		bow = -boxH // the curve rises three quarters of it: above the boxes between
	}
	return edge{fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+40, y1+bow, x2-40, y2+bow, x2, y2)}
}

const (
	boxW, boxH = 150, 34
	colW, rowH = 190, 46
	pad        = 8
)

// layout places steps (parents first, as a workflow keeps them).
func layout(steps []jobs.WorkflowStep, states []jobs.State) graph {
	if len(steps) > maxDrawn {
		return graph{}
	}
	at := map[string]int{}
	depth := make([]int, len(steps))
	rows := map[int]int{}
	g := graph{Drawn: true}
	for i, s := range steps {
		for _, p := range s.After {
			if j, ok := at[p]; ok {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		at[s.Name] = i
		row := rows[depth[i]]
		rows[depth[i]]++
		n := node{Name: s.Name, ID: s.ID, State: states[i], X: pad + depth[i]*colW, Y: pad + rowH/2 + row*rowH}
		g.Nodes = append(g.Nodes, n)
		g.Width, g.Height = max(g.Width, n.X+boxW+pad), max(g.Height, n.Y+boxH+pad)
	}
	for i, s := range steps {
		for _, p := range s.After {
			if j, ok := at[p]; ok {
				from, to := g.Nodes[j], g.Nodes[i]
				g.Edges = append(g.Edges, curve(from.X+boxW, from.Y+boxH/2, to.X, to.Y+boxH/2))
			}
		}
	}
	return g
}

// workflowAction cancels a workflow's steps not ended, or (retry) runs
// again those that ended without success, parents first
// (jobs.RetryWorkflow).
func (u *UI) workflowAction(retry bool) func(r *http.Request) (string, int, error) {
	return func(r *http.Request) (string, int, error) {
		id := r.PathValue("id")
		if !jobs.ValidID(id) {
			return id, http.StatusBadRequest, errors.New("that is no workflow id")
		}
		rec, err := u.Jobs.Get(r.Context(), id)
		if err != nil {
			return id, http.StatusNotFound, fmt.Errorf("no workflow %s: %v", id, err)
		}
		steps, err := jobs.WorkflowOf(rec)
		if err != nil {
			return id, http.StatusNotFound, fmt.Errorf("job %s is no workflow's", id)
		}
		if retry {
			re, ok := u.Jobs.(jobs.Retrier)
			if !ok {
				return id, http.StatusBadRequest, errors.New("this store retries no job")
			}
			if _, err := jobs.RetryWorkflow(r.Context(), re, steps); err != nil {
				return id, http.StatusConflict, err
			}
			return id, http.StatusOK, nil
		}
		c, ok := u.Jobs.(jobs.Canceler)
		if !ok {
			return id, http.StatusBadRequest, errors.New("this store cancels no job")
		}
		if err := jobs.CancelWorkflow(r.Context(), c, steps); err != nil {
			return id, http.StatusServiceUnavailable, err
		}
		return id, http.StatusOK, nil
	}
}
