package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// The nats-servers' monitoring pages the test reads: /jsz for the streams,
// /connz for who is connected where.

// jsz is the part of a nats-server's /jsz monitoring page the test reads:
// the meta leader, and each stream's config, cluster and consumers.
type jsz struct {
	Meta struct {
		Leader string `json:"leader"`
	} `json:"meta_cluster"`
	Accounts []struct {
		Streams []streamDetail `json:"stream_detail"`
	} `json:"account_details"`
}

type streamDetail struct {
	Name   string `json:"name"`
	Config struct {
		Replicas int `json:"num_replicas"`
	} `json:"config"`
	Cluster struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
			Lag     uint64 `json:"lag"`
		} `json:"replicas"`
	} `json:"cluster"`
	State struct {
		Messages uint64 `json:"messages"`
		LastSeq  uint64 `json:"last_seq"`
	} `json:"state"`
	Consumers []struct {
		Name          string `json:"name"`
		NumAckPending int    `json:"num_ack_pending"`
		NumPending    uint64 `json:"num_pending"`
		NumRedeliver  int    `json:"num_redelivered"`
		Delivered     struct {
			Stream uint64 `json:"stream_seq"`
		} `json:"delivered"`
		AckFloor struct {
			Stream uint64 `json:"stream_seq"`
		} `json:"ack_floor"`
	} `json:"consumer_detail"`
}

// readJSZ reads /jsz with stream details from a monitoring address.
func readJSZ(ctx context.Context, client *http.Client, addr string) (jsz, error) {
	var z jsz
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/jsz?streams=true&consumers=true&config=true", nil)
	if err != nil {
		return z, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return z, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return z, fmt.Errorf("/jsz on %s: %s", addr, resp.Status)
	}
	return z, json.NewDecoder(resp.Body).Decode(&z)
}

// healthy reports whether the stream has its replicas, a leader, and every
// follower current; the reason when not.
func (s streamDetail) healthy(replicas int) (bool, string) {
	switch {
	case s.Config.Replicas != replicas:
		return false, fmt.Sprintf("stream %s has %d replicas, want %d", s.Name, s.Config.Replicas, replicas)
	case s.Cluster.Leader == "":
		return false, fmt.Sprintf("stream %s has no leader", s.Name)
	case len(s.Cluster.Replicas) != replicas-1:
		return false, fmt.Sprintf("stream %s: leader %s and %d followers, want %d", s.Name, s.Cluster.Leader, len(s.Cluster.Replicas), replicas-1)
	}
	for _, r := range s.Cluster.Replicas {
		if !r.Current || r.Offline {
			return false, fmt.Sprintf("stream %s: follower %s not current (offline %v, lag %d)", s.Name, r.Name, r.Offline, r.Lag)
		}
	}
	return true, ""
}

// clientIPs reads the addresses of the clients named name connected to a
// server, from its /connz page.
func clientIPs(ctx context.Context, client *http.Client, addr, name string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/connz?limit=1024", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/connz on %s: %s", addr, resp.Status)
	}
	var z struct {
		Conns []struct {
			IP   string `json:"ip"`
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&z); err != nil {
		return nil, err
	}
	var ips []string
	for _, c := range z.Conns {
		if c.Name == name {
			ips = append(ips, c.IP)
		}
	}
	return ips, nil
}
