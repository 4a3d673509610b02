"""Reserved token ids shared by every vocabulary, the model and decoding."""

PAD_ID = 0  # padding; also the decoder's start symbol (the targets are shifted right with it)
EOS_ID = 1  # end of sentence, appended to every source and target
UNK_ID = 2  # unknown piece
