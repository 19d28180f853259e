# One image for every service and pushctl (the command picks the executable).
# Ubuntu 24.04 ships librdkafka 2.3, which talks to current Kafka brokers (Debian 12's 2.0.2
# does not: see docs/operations.md).
FROM swift:6.1-noble AS build
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka-dev pkg-config && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Shared Shared
COPY Services Services
COPY Tools Tools
COPY bench bench
COPY Tests Tests
RUN swift build -c release --static-swift-stdlib \
    --product registration --product delivery-planning --product apns-sender \
    --product fcm-sender --product tracking-ingestion --product pushctl \
 && mkdir /out && cp "$(swift build -c release --show-bin-path)"/{registration,delivery-planning,apns-sender,fcm-sender,tracking-ingestion,pushctl} /out/

FROM ubuntu:24.04
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka1 ca-certificates tzdata && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 push
COPY --from=build /out/ /usr/local/bin/
USER push
ENV PUSH_OPS_HOST=0.0.0.0 LOG_LEVEL=info
ENTRYPOINT []
