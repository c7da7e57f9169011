"""Tests of the Textual monitor against a fixture run database."""
