import Foundation
import PostgresNIO
import PushEvents

extension CatalogAdmin {
    /// A service's frequency cap as the admin API shows it: both null when it has none.
    package struct FrequencyCapOutput: Codable, Sendable, Equatable {
        package var messages: Int?
        package var periodHours: Int?

        package init(_ cap: FrequencyCap?) {
            messages = cap?.messages
            periodHours = cap?.periodHours
        }
    }

    /// `GET /admin/v1/services/{name}/frequency-cap`.
    package func frequencyCap(serviceName: String) async throws -> FrequencyCapOutput {
        let serviceId = try await serviceId(named: serviceName)
        let rows = try await postgres.query(
            "SELECT frequency_cap_messages, frequency_cap_period_hours FROM push.services WHERE service_id = \(serviceId)", logger: logger)
        for try await (messages, hours) in rows.decode((Int?, Int?).self) {
            return FrequencyCapOutput(messages.flatMap { messages in hours.map { FrequencyCap(messages: messages, periodHours: $0) } })
        }
        throw RegistrationError(status: 404, reason: "no service named \(serviceName)")
    }

    /// Sets the cap (`PUT`), or lifts it with nil (`DELETE`), with `ServiceFrequencyCapSet`,
    /// and answers once the catalog projection shows it.
    package func setFrequencyCap(serviceName: String, _ cap: FrequencyCap?) async throws -> FrequencyCapOutput {
        if let cap {
            guard FrequencyCap.messagesRange.contains(cap.messages) else {
                throw RegistrationError.badRequest("messages must be between 1 and \(FrequencyCap.messagesRange.upperBound), got \(cap.messages)")
            }
            guard FrequencyCap.periodHoursRange.contains(cap.periodHours) else {
                throw RegistrationError.badRequest(
                    "periodHours must be between 1 and \(FrequencyCap.periodHoursRange.upperBound) (30 days), got \(cap.periodHours)")
            }
        }
        let serviceId = try await serviceId(named: serviceName)
        try await publish(key: "service:\(serviceId)", ServiceFrequencyCapSet(serviceId: serviceId, cap: cap))
        try await awaitProjection(
            """
            SELECT count(*)::int FROM push.services
            WHERE service_id = \(serviceId) AND frequency_cap_messages IS NOT DISTINCT FROM \(cap?.messages)
              AND frequency_cap_period_hours IS NOT DISTINCT FROM \(cap?.periodHours)
            """)
        return FrequencyCapOutput(cap)
    }
}
