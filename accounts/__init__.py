"""Users, registration, profiles, ratings."""
