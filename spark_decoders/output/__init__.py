"""What the decoders give: the exchanges, frames and connections tables (Arrow, Spark DDL, JSON),
the sightings of one exchange in several captures merged, and the HTML report's data and page."""
