"""Seeing what ran: the threads, runs, events, state and memory of a durable database."""
