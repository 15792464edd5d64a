"""Finding a user's memories: the channels' SQL, fusion, query text, conversation recall."""
