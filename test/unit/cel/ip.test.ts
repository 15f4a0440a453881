import assert from 'node:assert/strict';
import { expectValues, failure } from './run-cel.js';

describe('cel IP library', () => {
  it('parses IPv4 and IPv6 addresses as strictly as Go, refusing zones and IPv4-mapped IPv6', () => {
    expectValues([
      ["isIP('127.0.0.1')", true],
      ["isIP('::1')", true],
      ["isIP('2001:db8::1')", true],
      ["isIP('64:ff9b::1.2.3.4')", true],
      ["isIP('127.0.0.01')", false],
      ["isIP('256.0.0.1')", false],
      ["isIP('1.2.3')", false],
      ["isIP('fe80::1%eth0')", false],
      ["isIP('::ffff:1.2.3.4')", false],
      ["isIP('1::2::3')", false],
      ["isIP('1:2:3:4:5:6:7:8:9')", false],
    ]);
    assert.match(failure("ip('fe80::1%eth0')").message, /zone/);
    assert.match(failure("ip('::ffff:1.2.3.4')").message, /IPv4-mapped/);
  });

  it('tells the family and the kind of an address', () => {
    expectValues([
      ["ip('127.0.0.1').family()", 4n],
      ["ip('::1').family()", 6n],
      ["ip('0.0.0.0').isUnspecified()", true],
      ["ip('::').isUnspecified()", true],
      ["ip('127.0.0.5').isLoopback()", true],
      ["ip('::1').isLoopback()", true],
      ["ip('224.0.0.1').isLinkLocalMulticast()", true],
      ["ip('ff02::1').isLinkLocalMulticast()", true],
      ["ip('169.254.1.1').isLinkLocalUnicast()", true],
      ["ip('fe80::1').isLinkLocalUnicast()", true],
      ["ip('192.168.0.1').isGlobalUnicast()", true],
      ["ip('2001:db8::1').isGlobalUnicast()", true],
      ["ip('255.255.255.255').isGlobalUnicast()", false],
      ["ip('127.0.0.1').isGlobalUnicast()", false],
    ]);
  });

  it('compares addresses and prints them canonically', () => {
    expectValues([
      ["ip('2001:DB8::1') == ip('2001:db8:0:0:0:0:0:1')", true],
      ["ip('127.0.0.1') != ip('127.0.0.2')", true],
      ["string(ip('2001:DB8:0:0:1:0:0:1'))", '2001:db8::1:0:0:1'],
      ["string(ip('2001:db8:0:0:1:1:0:0'))", '2001:db8::1:1:0:0'],
      ["ip.isCanonical('2001:db8::abcd')", true],
      ["ip.isCanonical('2001:DB8::ABCD')", false],
      ["ip.isCanonical('127.0.0.1')", true],
    ]);
  });
});

describe('cel CIDR library', () => {
  it('parses prefixes and refuses bad ones', () => {
    expectValues([
      ["isCIDR('10.0.0.0/8')", true],
      ["isCIDR('2001:db8::/32')", true],
      ["isCIDR('10.0.0.0/33')", false],
      ["isCIDR('10.0.0.0')", false],
      ["isCIDR('10.0.0.0/08')", false],
    ]);
  });

  it('tells what a prefix contains, its address, length and masked form', () => {
    expectValues([
      ["cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", true],
      ["cidr('10.0.0.0/8').containsIP('11.0.0.1')", false],
      ["cidr('10.0.0.0/8').containsIP('::1')", false],
      ["cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", true],
      ["cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", false],
      ["cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", true],
      ["string(cidr('192.168.0.1/24').masked())", '192.168.0.0/24'],
      ["cidr('2001:db8::/32').prefixLength()", 32n],
      ["cidr('10.0.0.0/8') == cidr('10.0.0.0/8')", true],
      ["cidr('10.0.0.1/8') == cidr('10.0.0.0/8')", false],
    ]);
  });
});
