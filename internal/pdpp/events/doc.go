// Package events serves the seven event-subscription tools of the PDPP
// adapter (/v1/event-subscriptions): discover the grant's subscription
// capabilities, create, list, get, update and delete a subscription, and
// send it a test event. It decodes the RS's subscription bodies within
// fixed bounds and fits each reply to its catalog budget. It takes the
// adapter's RS calls and reply conventions through Host; the adapter
// embeds Tools, so these are its handlers of those tools.
package events
