// Package alert evaluates Prometheus-style alerting rules over dbpilot's
// metrics: rule files (ParseRules, LoadRules, the built-in DefaultRules), an
// Evaluator that runs each rule's PromQL condition every interval and moves
// each alert through pending, firing and resolved (persisted in an
// AlertStore, so a restart does not notify again), topology-aware
// suppression, and notifiers (webhook, log).
package alert
