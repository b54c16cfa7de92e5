"""The bot's own records: threads, decisions, posts and the audit log of human decisions."""
