package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// ScopeStream is one (stream, connection) target of a subscription's resolved scope.
type ScopeStream struct {
	Name         string `json:"name"`
	ConnectionID string `json:"connection_id,omitempty"`
}

// Subscription is one stored event subscription. Secret is the whsec_ signing key.
type Subscription struct {
	ID             string
	GrantID        string
	ClientID       string
	CallbackURL    string
	Status         string
	Verified       bool
	Secret         string
	FilterStreams  []string // nil when the caller gave no streams filter
	Scope          []ScopeStream
	CreatedAt      string
	UpdatedAt      string
	DisabledReason *string
}

// InsertSubscription stores a new subscription.
func (s *Store) InsertSubscription(ctx context.Context, sub Subscription) error {
	filter, scope, err := subscriptionJSON(sub)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO subscriptions (subscription_id, grant_id, client_id, callback_url, status, verified, secret,
		filter_streams, scope, created_at, updated_at, disabled_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sub.ID, sub.GrantID, sub.ClientID, sub.CallbackURL, sub.Status, sub.Verified, sub.Secret, filter, scope,
		sub.CreatedAt, sub.UpdatedAt, sub.DisabledReason)
	if err != nil {
		return fmt.Errorf("store: insert subscription: %w", err)
	}
	return nil
}

// UpdateSubscription rewrites the mutable columns of a stored subscription.
func (s *Store) UpdateSubscription(ctx context.Context, sub Subscription) error {
	_, err := s.db.ExecContext(ctx, `UPDATE subscriptions SET status = ?, verified = ?, secret = ?, updated_at = ?, disabled_reason = ?
		WHERE subscription_id = ? AND grant_id = ?`,
		sub.Status, sub.Verified, sub.Secret, sub.UpdatedAt, sub.DisabledReason, sub.ID, sub.GrantID)
	if err != nil {
		return fmt.Errorf("store: update subscription: %w", err)
	}
	return nil
}

// DeleteSubscription removes a subscription of the grant for good.
func (s *Store) DeleteSubscription(ctx context.Context, grantID, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM subscriptions WHERE subscription_id = ? AND grant_id = ?`, id, grantID); err != nil {
		return fmt.Errorf("store: delete subscription: %w", err)
	}
	return nil
}

// CountSubscriptions counts the stored subscriptions of the grant.
func (s *Store) CountSubscriptions(ctx context.Context, grantID string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM subscriptions WHERE grant_id = ?`, grantID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count subscriptions: %w", err)
	}
	return n, nil
}

// Subscription returns one subscription owned by the grant.
func (s *Store) Subscription(ctx context.Context, grantID, id string) (Subscription, bool, error) {
	subs, err := s.subscriptions(ctx, `WHERE subscription_id = ? AND grant_id = ?`, id, grantID)
	if err != nil || len(subs) == 0 {
		return Subscription{}, false, err
	}
	return subs[0], true, nil
}

// Subscriptions returns every subscription owned by the grant, oldest first.
func (s *Store) Subscriptions(ctx context.Context, grantID string) ([]Subscription, error) {
	return s.subscriptions(ctx, `WHERE grant_id = ? ORDER BY created_at, subscription_id`, grantID)
}

func (s *Store) subscriptions(ctx context.Context, where string, args ...any) ([]Subscription, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT subscription_id, grant_id, client_id, callback_url, status, verified, secret,
		filter_streams, scope, created_at, updated_at, disabled_reason FROM subscriptions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query subscriptions: %w", err)
	}
	defer rows.Close()
	var out []Subscription
	for rows.Next() {
		var sub Subscription
		var filter sql.NullString
		var scope string
		var reason sql.NullString
		if err := rows.Scan(&sub.ID, &sub.GrantID, &sub.ClientID, &sub.CallbackURL, &sub.Status, &sub.Verified, &sub.Secret,
			&filter, &scope, &sub.CreatedAt, &sub.UpdatedAt, &reason); err != nil {
			return nil, fmt.Errorf("store: scan subscription: %w", err)
		}
		if filter.Valid {
			if err := json.Unmarshal([]byte(filter.String), &sub.FilterStreams); err != nil {
				return nil, fmt.Errorf("store: decode subscription filter: %w", err)
			}
		}
		if err := json.Unmarshal([]byte(scope), &sub.Scope); err != nil {
			return nil, fmt.Errorf("store: decode subscription scope: %w", err)
		}
		if reason.Valid {
			r := reason.String
			sub.DisabledReason = &r
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}

func subscriptionJSON(sub Subscription) (any, string, error) {
	if sub.Scope == nil {
		return nil, "", errors.New("store: subscription scope is required")
	}
	scope, err := json.Marshal(sub.Scope)
	if err != nil {
		return nil, "", err
	}
	var filter any
	if sub.FilterStreams != nil {
		b, err := json.Marshal(sub.FilterStreams)
		if err != nil {
			return nil, "", err
		}
		filter = string(b)
	}
	return filter, string(scope), nil
}
