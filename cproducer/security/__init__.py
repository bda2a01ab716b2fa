"""SASL for the NetworkClient (Java's ``org.apache.kafka.common.security``): the mechanisms'
client sides (``sasl_client``), ``sasl.jaas.config`` parsing (``jaas``), OAUTHBEARER token
providers (``oauthbearer``), the per-connection authentication state machine
(``sasl_authenticator``) and the producer's resolved SASL settings (``login``)."""
