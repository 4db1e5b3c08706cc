// Axis ticks at 1-2-5 steps: several in any range, never more than asked,
// at exact multiples of the step, labelled with the decimals the step needs.
#include <cmath>

#include <QTest>

#include "nice_ticks.hpp"

using namespace simtrain::gui;

Q_DECLARE_METATYPE(std::vector<double>)

class NiceTicksTest : public QObject {
  Q_OBJECT

private slots:
  void stepsAreOneTwoOrFiveTimesAPowerOfTen() {
    QCOMPARE(nice_step(0.3), 0.5);
    QCOMPARE(nice_step(0.2), 0.2);
    QCOMPARE(nice_step(1.01), 2.0);
    QCOMPARE(nice_step(7), 10.0);
    QCOMPARE(nice_step(3e-6), 5e-6);
  }

  void ticks_data() {
    QTest::addColumn<double>("low");
    QTest::addColumn<double>("high");
    QTest::addColumn<int>("max_ticks");
    QTest::addColumn<double>("step");
    QTest::addColumn<std::vector<double>>("values");
    // tiny-4gpu's search: step times 3.33 to 10.0 ms (padded), costs 2.17 to 5.40 USD.
    QTest::newRow("milliseconds") << 3.0 << 10.3 << 10 << 1.0 << std::vector<double>{3, 4, 5, 6, 7, 8, 9, 10};
    QTest::newRow("few allowed") << 3.0 << 10.3 << 4 << 2.0 << std::vector<double>{4, 6, 8, 10};
    QTest::newRow("dollars") << 2.01 << 5.56 << 8 << 0.5 << std::vector<double>{2.5, 3, 3.5, 4, 4.5, 5, 5.5};
    QTest::newRow("through zero") << -0.13 << 0.42 << 5 << 0.2 << std::vector<double>{0, 0.2, 0.4};
    QTest::newRow("large") << 61'000.0 << 692'081.0 << 4 << 200'000.0 << std::vector<double>{200'000, 400'000, 600'000};
    QTest::newRow("ends on ticks") << 0.0 << 1.0 << 6 << 0.2 << std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1};
  }
  void ticks() {
    QFETCH(double, low);
    QFETCH(double, high);
    QFETCH(int, max_ticks);
    QFETCH(double, step);
    QFETCH(std::vector<double>, values);
    const Ticks ticks = nice_ticks(low, high, max_ticks);
    QCOMPARE(ticks.step, step);
    QCOMPARE(ticks.values.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) QVERIFY2(std::fabs(ticks.values[i] - values[i]) < 1e-9 * step, QTest::toString(ticks.values[i]));
  }

  // Whatever the range: at most max_ticks, at least 3 where up to 8 are allowed, all in the range.
  void severalInAnyRange() {
    for (double low : {0.0, 0.37, 2.17, 123.0, 9.9e4})
      for (double span : {1e-5, 0.0123, 0.99, 1.01, 3.23, 6.7, 48.0, 1234.0})
        for (int max_ticks : {8, 12}) {
          const Ticks ticks = nice_ticks(low, low + span, max_ticks);
          QVERIFY(int(ticks.values.size()) <= max_ticks);
          QVERIFY2(ticks.values.size() >= 3, qPrintable(QString("%1 + %2: %3 ticks").arg(low).arg(span).arg(ticks.values.size())));
          for (double v : ticks.values) QVERIFY(v >= low - 1e-9 * span && v <= low + span + 1e-9 * span);
        }
  }

  void decimalsTellTicksApart() {
    QCOMPARE(tick_decimals(1), 0);
    QCOMPARE(tick_decimals(2), 0);
    QCOMPARE(tick_decimals(200'000), 0);
    QCOMPARE(tick_decimals(0.5), 1);
    QCOMPARE(tick_decimals(0.1), 1);
    QCOMPARE(tick_decimals(0.05), 2);
  }
};

QTEST_GUILESS_MAIN(NiceTicksTest)
#include "test_nice_ticks.moc"
