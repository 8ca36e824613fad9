package codec

import (
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/seal"
)

// ReadingConverter is for a client that writes plain payloads (users' workflows, whose
// workers hold none of temco's keys) yet reads temco's encrypted ones too: the results,
// queries and failures of temco's built-in workflows a workflow intent starts (Relocate).
func ReadingConverter(keys *seal.Keyring) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), decodeOnly{Codec{Keys: keys}})
}

// ReadingFailureConverter decodes failures with dc, and encodes none.
func ReadingFailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc})
}

// decodeOnly decrypts what it reads and writes in the clear.
type decodeOnly struct{ Codec }

func (decodeOnly) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return payloads, nil
}
