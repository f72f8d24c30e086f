"""The course around the library: the command line, the tour, the chapters' helpers and the website."""
