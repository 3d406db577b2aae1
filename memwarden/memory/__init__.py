"""Records, the governed Memory and Session, storage backends and embeddings."""
