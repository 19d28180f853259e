# One image for every service, pushctl and the provider simulators of the sandbox profile (the
# command picks the executable).
# Ubuntu 24.04 ships librdkafka 2.3, which talks to current Kafka brokers (Debian 12's 2.0.2
# does not: see docs/operations.md).
FROM swift:6.1-noble AS build
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka-dev libjemalloc-dev pkg-config && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Shared Shared
COPY Services Services
COPY Tools Tools
COPY Simulators Simulators
COPY bench bench
COPY Tests Tests
# `swift build --product` takes one product (given twice, the last wins): one build per product,
# sharing the modules already compiled.
ARG PRODUCTS="registration delivery-planning apns-sender fcm-sender tracking-ingestion console pushctl apns-simulator fcm-simulator"
RUN mkdir /out \
 && for product in $PRODUCTS; do swift build -c release --static-swift-stdlib --product "$product" || exit 1; done \
 && bin="$(swift build -c release --show-bin-path)" \
 && for product in $PRODUCTS; do cp "$bin/$product" /out/ || exit 1; done

FROM ubuntu:24.04
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka1 libjemalloc2 ca-certificates tzdata && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 push
COPY --from=build /out/ /usr/local/bin/
USER push
ENV PUSH_OPS_HOST=0.0.0.0 LOG_LEVEL=info
ENTRYPOINT []
