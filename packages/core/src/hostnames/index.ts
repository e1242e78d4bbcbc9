export * from "./DnsResolver.ts"
export * from "./HostedZones.ts"
export * from "./HostnameName.ts"
