"""The poll: fetch the billing sources, ask each domain what is due, queue it in the outbox."""
