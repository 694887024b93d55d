"""File translation jobs and the Apache Beam pipeline."""
