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

/* IncrementalAlterConfigs (KIP-339) arrived in librdkafka 2.2. Debian 12's headers (2.0.2) do not
 * declare it and Tansu implements only it, not the older AlterConfigs. The project's runtime
 * (docs/kafka-client.md) is newer, so these wrappers look the functions up when called: with a
 * runtime that lacks them, crdkafka_has_incremental_alter_configs() is 0 and nothing is called. */
#include <dlfcn.h>

typedef rd_kafka_error_t *(*crdkafka_add_incremental_config_fn)(rd_kafka_ConfigResource_t *, const char *, int, const char *);
typedef void (*crdkafka_incremental_alter_configs_fn)(rd_kafka_t *, rd_kafka_ConfigResource_t **, size_t, const rd_kafka_AdminOptions_t *,
                                                      rd_kafka_queue_t *);
typedef const rd_kafka_event_t *(*crdkafka_incremental_result_fn)(rd_kafka_event_t *);
typedef const rd_kafka_ConfigResource_t **(*crdkafka_incremental_result_resources_fn)(const rd_kafka_event_t *, size_t *);

/// 1 when the loaded librdkafka has IncrementalAlterConfigs (2.2 or later).
static inline int crdkafka_has_incremental_alter_configs(void) {
    return dlsym(RTLD_DEFAULT, "rd_kafka_IncrementalAlterConfigs") != NULL &&
           dlsym(RTLD_DEFAULT, "rd_kafka_ConfigResource_add_incremental_config") != NULL &&
           dlsym(RTLD_DEFAULT, "rd_kafka_event_IncrementalAlterConfigs_result") != NULL &&
           dlsym(RTLD_DEFAULT, "rd_kafka_IncrementalAlterConfigs_result_resources") != NULL;
}

/// Adds "set `name` to `value`" (RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET, 0) to the resource.
static inline rd_kafka_error_t *crdkafka_add_incremental_set(rd_kafka_ConfigResource_t *config, const char *name, const char *value) {
    crdkafka_add_incremental_config_fn add =
        (crdkafka_add_incremental_config_fn)dlsym(RTLD_DEFAULT, "rd_kafka_ConfigResource_add_incremental_config");
    return add(config, name, 0, value);
}

static inline void crdkafka_incremental_alter_configs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs, size_t count,
                                                      const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *queue) {
    crdkafka_incremental_alter_configs_fn alter = (crdkafka_incremental_alter_configs_fn)dlsym(RTLD_DEFAULT, "rd_kafka_IncrementalAlterConfigs");
    alter(rk, configs, count, options, queue);
}

/// The resources of an IncrementalAlterConfigs result event; NULL when the event is another kind.
static inline const rd_kafka_ConfigResource_t **crdkafka_incremental_alter_configs_result(rd_kafka_event_t *event, size_t *count) {
    crdkafka_incremental_result_fn result = (crdkafka_incremental_result_fn)dlsym(RTLD_DEFAULT, "rd_kafka_event_IncrementalAlterConfigs_result");
    crdkafka_incremental_result_resources_fn resources =
        (crdkafka_incremental_result_resources_fn)dlsym(RTLD_DEFAULT, "rd_kafka_IncrementalAlterConfigs_result_resources");
    const rd_kafka_event_t *typed = result(event);
    return typed == NULL ? NULL : resources(typed, count);
}

#endif
