package demors

import (
	"maps"
	"net/http"
	"strconv"
)

// reply is one finished HTTP response. Its Visit methods satisfy every generated response
// interface, so any operation can return it with full control of the body (field names and
// order follow the reference RS).
type reply struct {
	status int
	header http.Header
	body   []byte
}

func jsonReply(status int, body any) *reply {
	b, err := marshalJSON(body)
	if err != nil {
		b = []byte(`{"error":{"code":"internal_error","message":"response encoding failed","type":"api_error"}}`)
		status = http.StatusInternalServerError
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return &reply{status: status, header: h, body: b}
}

func (r *reply) write(w http.ResponseWriter) error {
	maps.Copy(w.Header(), r.header)
	if r.body != nil {
		w.Header().Set("Content-Length", strconv.Itoa(len(r.body)))
	}
	w.WriteHeader(r.status)
	if len(r.body) == 0 {
		return nil
	}
	_, err := w.Write(r.body)
	return err
}

func (r *reply) VisitGetBlobResponse(w http.ResponseWriter) error                 { return r.write(w) }
func (r *reply) VisitListEventSubscriptionsResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r *reply) VisitCreateEventSubscriptionResponse(w http.ResponseWriter) error { return r.write(w) }
func (r *reply) VisitDeleteEventSubscriptionResponse(w http.ResponseWriter) error { return r.write(w) }
func (r *reply) VisitGetEventSubscriptionResponse(w http.ResponseWriter) error    { return r.write(w) }
func (r *reply) VisitUpdateEventSubscriptionResponse(w http.ResponseWriter) error { return r.write(w) }
func (r *reply) VisitSendTestEventResponse(w http.ResponseWriter) error           { return r.write(w) }
func (r *reply) VisitGetSchemaResponse(w http.ResponseWriter) error               { return r.write(w) }
func (r *reply) VisitSearchRecordsLexicalResponse(w http.ResponseWriter) error    { return r.write(w) }
func (r *reply) VisitSearchRecordsHybridResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r *reply) VisitSearchRecordsSemanticResponse(w http.ResponseWriter) error   { return r.write(w) }
func (r *reply) VisitListStreamsResponse(w http.ResponseWriter) error             { return r.write(w) }
func (r *reply) VisitGetStreamMetadataResponse(w http.ResponseWriter) error       { return r.write(w) }
func (r *reply) VisitAggregateStreamResponse(w http.ResponseWriter) error         { return r.write(w) }
func (r *reply) VisitListRecordsResponse(w http.ResponseWriter) error             { return r.write(w) }
func (r *reply) VisitGetRecordResponse(w http.ResponseWriter) error               { return r.write(w) }
func (r *reply) VisitGetFieldWindowResponse(w http.ResponseWriter) error          { return r.write(w) }
