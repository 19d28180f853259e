#ifndef CRDKAFKA_SHIM_H
#define CRDKAFKA_SHIM_H

#include <librdkafka/rdkafka.h>

/// `rd_kafka_producev` is variadic and cannot be called from Swift; this wrapper fixes its
/// arguments. `headers` ownership passes to librdkafka on success only (the caller destroys
/// them on failure). The payload and key are copied (`RD_KAFKA_MSG_F_COPY`).
static inline rd_kafka_resp_err_t crdkafka_produce(rd_kafka_t *rk,
                                                   const char *topic,
                                                   int32_t partition,
                                                   const void *key, size_t key_size,
                                                   const void *value, size_t value_size,
                                                   rd_kafka_headers_t *headers,
                                                   void *opaque) {
    return rd_kafka_producev(rk,
                             RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_KEY(key, key_size),
                             RD_KAFKA_V_VALUE((void *)value, value_size),
                             RD_KAFKA_V_HEADERS(headers),
                             RD_KAFKA_V_OPAQUE(opaque),
                             RD_KAFKA_V_END);
}

/// Runtime version as a number (`0xMMmmrrxx`), so Swift can refuse a runtime that is too old.
static inline int crdkafka_runtime_version(void) { return rd_kafka_version(); }

#endif
