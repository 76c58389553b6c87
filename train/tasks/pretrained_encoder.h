#pragma once
// The capability "this run pre-trained a BERT encoder that fine-tuning can start from": the
// classification task's init_from asks it of the run it names (masked_lm's encoder, electra's
// discriminator), so a new pre-training task is offered, not named, there.
#include <string>

#include "models/bert/bert.h"

namespace nlpzoo {

class PretrainedBertEncoder {
 public:
  virtual ~PretrainedBertEncoder() = default;
  /// The encoder that fine-tuning loads as BertForSequenceClassification's "bert".
  virtual BertModelImpl& pretrained_encoder() = 0;
  /// Whether pre-training updated the encoder's pooler (only an NSP head does).
  virtual bool pooler_trained() const = 0;
  /// What the encoder is in its run, for init_from's line ("the discriminator"); "" when the
  /// run's model is the encoder and its pre-training head.
  virtual std::string encoder_role() const = 0;
  /// Why the pooler starts fresh when pooler_trained() is false ("masked_lm without nsp never
  /// trains it").
  virtual std::string untrained_pooler_reason() const = 0;
};

}  // namespace nlpzoo
