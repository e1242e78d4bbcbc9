export { contractSuites } from "./ContractSuites.ts"
export * as ContractFixtures from "./Fixtures.ts"
export { transactorSuite } from "./TransactorSuite.ts"
