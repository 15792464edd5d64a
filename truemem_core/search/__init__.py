"""Finding a user's memories and past messages: the channels' SQL, the adjacent channel,
fusion, query text, the hybrid search, conversation recall."""
