// Types of resources.js for the sidebar (labextension/src), which imports it.

export function parseQuantity(quantity: string | null | undefined): number;
export function resourceLabel(resource: string): string;
export function resourceOrder(resource: string): number;
